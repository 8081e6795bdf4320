# unit tests of core: add to check_PROGRAMS and TESTS here

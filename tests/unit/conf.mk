# unit tests of conf: add to check_PROGRAMS and TESTS here

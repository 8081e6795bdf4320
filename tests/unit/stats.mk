# unit tests of stats: add to check_PROGRAMS and TESTS here

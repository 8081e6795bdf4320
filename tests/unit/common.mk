# unit tests of common: add to check_PROGRAMS and TESTS here

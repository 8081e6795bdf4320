# unit tests of redis: add to check_PROGRAMS and TESTS here

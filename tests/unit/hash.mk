# unit tests of hash: add to check_PROGRAMS and TESTS here

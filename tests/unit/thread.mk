# unit tests of thread: add to check_PROGRAMS and TESTS here

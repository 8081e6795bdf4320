# unit tests of memcache: add to check_PROGRAMS and TESTS here

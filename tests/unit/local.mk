# unit tests (cmocka). Each module keeps its tests' rules in tests/unit/<module>.mk.
include tests/unit/common.mk
include tests/unit/app.mk
include tests/unit/hash.mk
include tests/unit/conf.mk
include tests/unit/msg.mk
include tests/unit/redis.mk
include tests/unit/memcache.mk
include tests/unit/core.mk
include tests/unit/thread.mk
include tests/unit/stats.mk
include tests/unit/manage.mk

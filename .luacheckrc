-- luacheck settings for the Redis function library (src/store/redis/lua/), linted as Redis loads
-- it: the files joined into one chunk (test/redis-lua.test.ts). Redis's Lua is 5.1 with the
-- redis, cjson and bit modules.
std = 'lua51'
read_globals = { 'redis', 'cjson', 'bit' }
max_line_length = 120

-- What every part of the library uses: reading the positions blob, numbers as Redis wants them,
-- the server's clock (or a test's), a filter's geometry, and the answers a retried call gets back.

-- The little-endian u32 at byte `at` (1-based) of a binary argument.
local function u32(blob, at)
  local a, b, c, d = string.byte(blob, at, at + 3)
  return a + b * 256 + c * 65536 + d * 16777216
end

-- Numbers as whole decimals (Lua's tostring turns large ones into exponent notation).
local function int(x)
  return string.format('%.0f', x)
end

-- The running call's clock, set by `timed` for the call of a function that reads the time (nil
-- outside one): false for Redis's TIME, the one clock every machine agrees on (leases, the node
-- registry), which production always passes; or the time in ms that a test's clock gives
-- (RedisContext.clockArg), so that its time moves as the test says, without waiting.
local call_now_ms = nil

local function now_ms()
  assert(call_now_ms ~= nil, 'now_ms outside a timed function (library.lua)')
  if call_now_ms then return call_now_ms end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- A function that reads the clock, as registered (library.lua): its caller appends its clock to
-- its arguments ('' for Redis's TIME, else whole ms); taken off here, so that the function sees
-- its ARGV as its comment lists it.
local function timed(callback)
  return function(keys, args)
    local clock = table.remove(args) or 'none'
    local ms = tonumber(clock)
    assert(clock == '' or (ms and ms >= 0 and ms == math.floor(ms)), 'a timed function\'s last argument is its clock')
    call_now_ms = clock ~= '' and ms
    local reply = callback(keys, args)
    call_now_ms = nil
    return reply
  end
end

-- A batch's geometry (partitionGeometry in redis/partition.ts), decoded from JSON:
-- {filters = {{slice, k, blocked}, ...}, bytes = {size of filter f, ...},
--  caps = {capacity of slice j, ...}, planned = {json, ...}, max = most slices}.
-- blocked = 1: a URL's k positions in that filter lie in one 512-bit block (blocked and
-- partitioned layouts). Returns the positions per URL, then per slice its first filter and its
-- filter count, then per filter its k, its offset (in positions) within a URL's positions and
-- whether it is blocked.
local function layout(geo)
  local per_url = 0
  local first, count, hashes, offsets, blocked = {}, {}, {}, {}, {}
  for f, spec in ipairs(geo.filters) do
    local s = spec[1] + 1
    if first[s] == nil then
      first[s] = f
      count[s] = 0
    end
    count[s] = count[s] + 1
    hashes[f] = spec[2]
    blocked[f] = spec[3] == 1
    offsets[f] = per_url
    per_url = per_url + spec[2]
  end
  return per_url, first, count, hashes, offsets, blocked
end

-- The filter keys a call declared, keys[from] onwards, by filter index from 0: every key a
-- function touches is declared in KEYS (Redis's rule for scripts, which a cluster relies on).
local function filter_keys(keys, from)
  local filters = {}
  for i = from, #keys do filters[i - from] = keys[i] end
  return filters
end

-- A filter's string at its exact size: SET of a full-length value allocates exactly that much,
-- where SETBIT or SETRANGE past the end would grow the string greedily (up to twice the size).
local function allocate(key, bytes)
  if redis.call('EXISTS', key) == 0 then redis.call('SET', key, string.rep('\0', bytes)) end
end

-- The answer an earlier run of this very call gave, or nil. A call that a client may send again
-- (its reply was lost in a failover) keeps its answer under answer_key for ttl_s seconds
-- (keep_answer); the client names its previous call's answer key too, deleted here once the
-- client has its reply (drop_previous).
local function earlier_answer(answer_key, previous_key, drop_previous, ttl_s)
  if drop_previous and previous_key ~= answer_key then redis.call('DEL', previous_key) end
  local earlier = redis.call('GET', answer_key)
  -- A write, so that a WAIT behind this call covers the first run (replication is in order).
  if earlier then redis.call('EXPIRE', answer_key, ttl_s) end
  return earlier
end

local function keep_answer(answer_key, answer, ttl_s)
  redis.call('SET', answer_key, answer, 'EX', ttl_s)
end

/**
 * The seenstore Redis Function library (Redis 7 Functions): every atomic step of the Redis backend
 * is one FCALL of it on keys of one hash slot. Loaded once per master with FUNCTION LOAD, replaced
 * only when the loaded library reports another version (ss_version).
 *
 * The functions never hash and never compute a bit position: positions arrive computed in JS
 * (src/filters/positions.ts, the one implementation of every layout) as one binary argument, u32
 * little-endian Redis bit offsets, URL-major: for URL i, every filter of every slice in filter
 * order, k of them per filter. A partitioned epoch's positions are within the URL's partition, and
 * each partition is a self-contained scalable filter with the keys below in its own slot: a
 * function never sees another partition. Keys (docs/redis.md):
 *
 *   epoch state  hash  open (1|0), submitted, added, a<j> (new URLs of slice j)
 *   epoch slices list  one JSON slice spec per slice, appended verbatim (never re-encoded here)
 *   filter i     string of bits, Redis bit offset = seenstore bit p with the bit order in a byte reversed
 *   batch id     string, the answers of a decided batch (one byte per URL, '1' new), with a TTL
 *
 * Scope slot: scope record (string, JSON), epochs (hash n -> JSON entry), drops (hash n -> JSON entry),
 * plan:<uid> (list: an open epoch's grown slices, the specs every partition grows into), queues.
 */
export const LIBRARY_VERSION = '9';

export const LIBRARY = `#!lua name=seenstore
local VERSION = '${LIBRARY_VERSION}'

local function u32(blob, at)
  local a, b, c, d = string.byte(blob, at, at + 3)
  return a + b * 256 + c * 65536 + d * 16777216
end

-- geometry: {filters = {{slice, k, blocked}, ...}, bytes = {size of filter f, ...}, caps = {capacity of slice j, ...}, planned = {json, ...}, max = most slices}
-- blocked = 1: the filter's k positions for a URL lie in one 512-bit block (blocked and partitioned layouts).
local function layout(geo)
  local perUrl = 0
  local first, count, ks, offs, blk = {}, {}, {}, {}, {}
  for f, fk in ipairs(geo.filters) do
    local s = fk[1] + 1
    if first[s] == nil then first[s] = f; count[s] = 0 end
    count[s] = count[s] + 1
    ks[f] = fk[2]
    blk[f] = fk[3] == 1
    offs[f] = perUrl
    perUrl = perUrl + fk[2]
  end
  return perUrl, first, count, ks, offs, blk
end

-- Whether every filter f0 .. f0 + fn - 1 holds the URL whose positions start at blob byte at. A
-- blocked filter's block is read once (GETRANGE of its 64 bytes) and its bits tested here; a
-- classic filter's bits one GETBIT each, stopping at the first unset one.
local function holds(fbase, blob, at, f0, fn, ks, offs, blk)
  for f = f0, f0 + fn - 1 do
    local key = fbase .. (f - 1)
    local p = at + offs[f] * 4
    if blk[f] then
      local first = u32(blob, p)
      local base = first - first % 512
      local block = redis.call('GETRANGE', key, base / 8, base / 8 + 63)
      for j = 1, ks[f] do
        local q = u32(blob, p) - base
        local byte = string.byte(block, (q - q % 8) / 8 + 1) or 0
        if bit.band(byte, bit.lshift(1, 7 - q % 8)) == 0 then return false end
        p = p + 4
      end
    else
      for j = 1, ks[f] do
        if redis.call('GETBIT', key, u32(blob, p)) == 0 then return false end
        p = p + 4
      end
    end
  end
  return true
end

-- Sets a URL's k bits in a filter: a blocked filter's block is read, changed in Lua and written
-- back whole (GETRANGE + SETRANGE of 64 bytes: two calls whatever k, and a short AOF record); a
-- classic filter's bits by one BITFIELD of k SETs (a call per bit cost most of the script).
local function set_bits(key, blob, p, k, blocked)
  if blocked then
    local first = u32(blob, p)
    local base = first - first % 512
    local bytes = {string.byte(redis.call('GETRANGE', key, base / 8, base / 8 + 63), 1, 64)}
    for j = 1, k do
      local q = u32(blob, p) - base
      local b = (q - q % 8) / 8 + 1
      bytes[b] = bit.bor(bytes[b], bit.lshift(1, 7 - q % 8))
      p = p + 4
    end
    redis.call('SETRANGE', key, base / 8, string.char(unpack(bytes)))
    return
  end
  local ops = {}
  for j = 1, k do
    ops[#ops + 1] = 'SET'
    ops[#ops + 1] = 'u1'
    ops[#ops + 1] = u32(blob, p)
    ops[#ops + 1] = 1
    p = p + 4
  end
  redis.call('BITFIELD', key, unpack(ops))
end

-- A filter's string at its exact size: SET of a full-length value allocates exactly that much,
-- where SETBIT or SETRANGE past the end would grow the string greedily (up to twice the size).
local function allocate(key, bytes)
  if redis.call('EXISTS', key) == 0 then redis.call('SET', key, string.rep('\0', bytes)) end
end

-- Counting slices (counting-v1, filters/counting.ts SpectralFilter): one byte per counter, counter p
-- at byte p; filter f of slice s is its primary, f + 1 its secondary. Positions as for bits, a
-- repeated cell written as 4294967295 (skipped), so each cell counts once per URL.
local NONE = 4294967295

local function cget(key, p)
  local v = redis.call('GETRANGE', key, p, p)
  if v == '' then return 0 end
  return string.byte(v)
end

-- The minimum of the URL's counters and how many times it occurs.
local function cmin(key, blob, at, k)
  local min, times = 256, 0
  for j = 0, k - 1 do
    local p = u32(blob, at + j * 4)
    if p ~= NONE then
      local c = cget(key, p)
      if c < min then min = c; times = 1 elseif c == min then times = times + 1 end
    end
  end
  return min, times
end

local function cadd(key, blob, at, k, by)
  for j = 0, k - 1 do
    local p = u32(blob, at + j * 4)
    if p ~= NONE then redis.call('SETRANGE', key, p, string.char(math.min(255, cget(key, p) + by))) end
  end
end

local function csub(key, blob, at, k)
  for j = 0, k - 1 do
    local p = u32(blob, at + j * 4)
    if p ~= NONE then
      local c = cget(key, p)
      if c > 0 and c < 255 then redis.call('SETRANGE', key, p, string.char(c - 1)) end
    end
  end
end

-- Spectral count of a URL in slice s (recurring minimum, then the secondary).
local function scount(fbase, blob, at, f, ks, offs)
  local primary, times = cmin(fbase .. (f - 1), blob, at + offs[f] * 4, ks[f])
  if primary == 0 or times >= 2 then return primary end
  local secondary = cmin(fbase .. f, blob, at + offs[f + 1] * 4, ks[f + 1])
  if secondary > 0 then return math.min(secondary, primary) end
  return primary
end

local function sholds(fbase, blob, at, f, ks, offs)
  local primary = cmin(fbase .. (f - 1), blob, at + offs[f] * 4, ks[f])
  return primary > 0
end

local function sadd(fbase, blob, at, f, ks, offs)
  local pkey, skey = fbase .. (f - 1), fbase .. f
  local pat, sat = at + offs[f] * 4, at + offs[f + 1] * 4
  cadd(pkey, blob, pat, ks[f], 1)
  local pmin, times = cmin(pkey, blob, pat, ks[f])
  if times < 2 then
    local smin = cmin(skey, blob, sat, ks[f + 1])
    if smin > 0 then cadd(skey, blob, sat, ks[f + 1], 1) else cadd(skey, blob, sat, ks[f + 1], pmin) end
  end
end

-- What ss_add and ss_count_add do first: a retried batch gets its first answers back; a sealed,
-- missing or changed epoch, or a batch larger than the planned slices can take, is refused; else
-- the batch's decoded arguments and each slice's added count. Returns (reply) or (nil, batch).
local function batch_begin(keys, args)
  local state, slices, batch = keys[1], keys[2], keys[3]
  if args[7] ~= '' then redis.call('DEL', args[7]) end
  local done = redis.call('GET', batch)
  if done then
    -- A write, so that a WAIT behind this call covers the batch (replication is in order).
    redis.call('EXPIRE', batch, tonumber(args[6]))
    return {'done', done}
  end
  local open = redis.call('HGET', state, 'open')
  if not open then return {'missing'} end
  if open ~= '1' then return {'sealed'} end
  local have = redis.call('LLEN', slices)
  if have ~= tonumber(args[1]) then return {'stale', have} end
  local n = tonumber(args[2])
  local geo = cjson.decode(args[3])
  local planned = #geo.caps
  local added = {}
  for j = 1, planned do added[j] = 0 end
  for j = 1, have do added[j] = tonumber(redis.call('HGET', state, 'a' .. (j - 1)) or '0') end
  local spare = 0
  for j = have + 1, planned do spare = spare + geo.caps[j] end
  if n > geo.caps[have] - added[have] + spare and planned < geo.max then return {'short', added[have]} end
  return nil, { state = state, slices = slices, batch = batch, have = have, n = n, geo = geo, planned = planned, added = added }
end

-- As ss_add, for a counting epoch: each URL is counted in the oldest slice that holds it; a URL no
-- slice holds goes to the newest (growing first when it is full) and is new.
local function ss_count_add(keys, args)
  local early, b = batch_begin(keys, args)
  if early then return early end
  local state, slices, batch, have, n, geo, planned, added = b.state, b.slices, b.batch, b.have, b.n, b.geo, b.planned, b.added
  local blob = args[4]
  local fbase = args[5]
  local perUrl, first, count, ks, offs, blk = layout(geo)
  local cur = have
  local flags = {}
  local fresh = 0
  for i = 0, n - 1 do
    local at = i * perUrl * 4 + 1
    local home = 0
    for s = 1, cur do
      if sholds(fbase, blob, at, first[s], ks, offs) then home = s; break end
    end
    if home == 0 then
      if added[cur] >= geo.caps[cur] and cur < planned then
        redis.call('RPUSH', slices, geo.planned[cur - have + 1])
        cur = cur + 1
        for f = first[cur], first[cur] + count[cur] - 1 do allocate(fbase .. (f - 1), geo.bytes[f]) end
      end
      home = cur
      flags[i + 1] = '1'
      fresh = fresh + 1
      added[cur] = added[cur] + 1
    else
      flags[i + 1] = '0'
    end
    sadd(fbase, blob, at, first[home], ks, offs)
  end
  local counts = {}
  for j = 1, cur do
    counts[#counts + 1] = 'a' .. (j - 1)
    counts[#counts + 1] = added[j]
  end
  redis.call('HSET', state, unpack(counts))
  redis.call('HINCRBY', state, 'submitted', n)
  redis.call('HINCRBY', state, 'added', fresh)
  local answers = table.concat(flags)
  redis.call('SET', batch, answers, 'EX', tonumber(args[6]))
  return {'ok', answers, cur, added[cur]}
end

-- KEYS: state, slices. ARGV: slices assumed, n, geometry, positions, filter key base. Per URL its
-- count in the slice that holds it (0: none), as one byte each (saturating at 255).
local function ss_count(keys, args)
  local n = tonumber(args[2])
  local open = redis.call('HGET', keys[1], 'open')
  if not open then return {'ok', string.rep(string.char(0), n)} end
  local have = redis.call('LLEN', keys[2])
  if have ~= tonumber(args[1]) then return {'stale', have} end
  local geo = cjson.decode(args[3])
  local blob = args[4]
  local perUrl, first, count, ks, offs, blk = layout(geo)
  local out = {}
  for i = 0, n - 1 do
    local at = i * perUrl * 4 + 1
    local c = 0
    for s = 1, have do
      c = scount(args[5], blob, at, first[s], ks, offs)
      if c > 0 then break end
    end
    out[i + 1] = string.char(c)
  end
  return {'ok', table.concat(out)}
end

-- KEYS: state, slices, batch. ARGV as ss_count, then batch ttl, previous batch. One occurrence of each
-- URL out of the slice that holds it; returns how many were deleted.
local function ss_count_delete(keys, args)
  if args[7] ~= '' then redis.call('DEL', args[7]) end
  local done = redis.call('GET', keys[3])
  if done then
    redis.call('EXPIRE', keys[3], tonumber(args[6]))
    return {'done', done}
  end
  local open = redis.call('HGET', keys[1], 'open')
  if not open then return {'ok', '0'} end
  if open ~= '1' then return {'sealed'} end
  local have = redis.call('LLEN', keys[2])
  if have ~= tonumber(args[1]) then return {'stale', have} end
  local n = tonumber(args[2])
  local geo = cjson.decode(args[3])
  local blob = args[4]
  local fbase = args[5]
  local perUrl, first, count, ks, offs, blk = layout(geo)
  local deleted = 0
  for i = 0, n - 1 do
    local at = i * perUrl * 4 + 1
    for s = 1, have do
      local f = first[s]
      if sholds(fbase, blob, at, f, ks, offs) then
        local pkey, pat = fbase .. (f - 1), at + offs[f] * 4
        csub(pkey, blob, pat, ks[f])
        local _, times = cmin(pkey, blob, pat, ks[f])
        local sat = at + offs[f + 1] * 4
        if times < 2 and cmin(fbase .. f, blob, sat, ks[f + 1]) > 0 then csub(fbase .. f, blob, sat, ks[f + 1]) end
        deleted = deleted + 1
        break
      end
    end
  end
  redis.call('SET', keys[3], tostring(deleted), 'EX', tonumber(args[6]))
  return {'ok', tostring(deleted)}
end

local function ss_version(keys, args)
  return VERSION
end

-- KEYS: state, slices, batch. ARGV: slices assumed, n, geometry json, positions, filter key base, batch ttl s, previous batch key or ''
local function ss_add(keys, args)
  local early, b = batch_begin(keys, args)
  if early then return early end
  local state, slices, batch, have, n, geo, planned, added = b.state, b.slices, b.batch, b.have, b.n, b.geo, b.planned, b.added
  local blob = args[4]
  local fbase = args[5]
  local perUrl, first, count, ks, offs, blk = layout(geo)
  local cur = have
  local flags = {}
  local fresh = 0
  for i = 0, n - 1 do
    local at = i * perUrl * 4 + 1
    local seen = false
    for s = 1, cur do
      if holds(fbase, blob, at, first[s], count[s], ks, offs, blk) then seen = true; break end
    end
    if seen then
      flags[i + 1] = '0'
    else
      if added[cur] >= geo.caps[cur] and cur < planned then
        redis.call('RPUSH', slices, geo.planned[cur - have + 1])
        cur = cur + 1
        for f = first[cur], first[cur] + count[cur] - 1 do allocate(fbase .. (f - 1), geo.bytes[f]) end
      end
      for f = first[cur], first[cur] + count[cur] - 1 do
        set_bits(fbase .. (f - 1), blob, at + offs[f] * 4, ks[f], blk[f])
      end
      flags[i + 1] = '1'
      fresh = fresh + 1
      added[cur] = added[cur] + 1
    end
  end
  local counts = {}
  for j = 1, cur do
    counts[#counts + 1] = 'a' .. (j - 1)
    counts[#counts + 1] = added[j]
  end
  redis.call('HSET', state, unpack(counts))
  redis.call('HINCRBY', state, 'submitted', n)
  redis.call('HINCRBY', state, 'added', fresh)
  local answers = table.concat(flags)
  redis.call('SET', batch, answers, 'EX', tonumber(args[6]))
  return {'ok', answers, cur, added[cur]}
end

-- KEYS: state, slices. ARGV: slices assumed, n, geometry json, positions, filter key base
local function ss_has(keys, args)
  local n = tonumber(args[2])
  local open = redis.call('HGET', keys[1], 'open')
  if not open then return {'ok', string.rep('0', n)} end
  local have = redis.call('LLEN', keys[2])
  if have ~= tonumber(args[1]) then return {'stale', have} end
  local geo = cjson.decode(args[3])
  local blob = args[4]
  local perUrl, first, count, ks, offs, blk = layout(geo)
  local flags = {}
  for i = 0, n - 1 do
    local at = i * perUrl * 4 + 1
    local seen = '0'
    for s = 1, have do
      if holds(args[5], blob, at, first[s], count[s], ks, offs, blk) then seen = '1'; break end
    end
    flags[i + 1] = seen
  end
  return {'ok', table.concat(flags)}
end

-- KEYS: state, slices. ARGV: first slice json, open flag, filter key base, then the byte size of each
-- filter of the first slice. Creates the epoch's state and filters unless it exists.
local function ss_init(keys, args)
  if redis.call('EXISTS', keys[1]) == 1 then return 'exists' end
  redis.call('HSET', keys[1], 'open', args[2], 'submitted', 0, 'added', 0, 'a0', 0)
  redis.call('DEL', keys[2])
  redis.call('RPUSH', keys[2], args[1])
  for i = 4, #args do allocate(args[3] .. (i - 4), tonumber(args[i])) end
  return 'created'
end

-- KEYS: one key. ARGV: bytes. A zero string of exactly that size (before writing it in pieces).
local function ss_alloc(keys, args)
  redis.call('DEL', keys[1])
  allocate(keys[1], tonumber(args[1]))
  return 'ok'
end

-- KEYS: state, slices. ARGV: filter key base, filter count. Counts and bit counts of every filter.
local function state_of(keys, args)
  local v = redis.call('HGETALL', keys[1])
  local ones = {}
  for f = 0, tonumber(args[2]) - 1 do ones[#ones + 1] = redis.call('BITCOUNT', args[1] .. f) end
  return {v, redis.call('LRANGE', keys[2], 0, -1), ones}
end

local function ss_state(keys, args)
  return state_of(keys, args)
end

-- KEYS: state, slices. ARGV: filter key base, filter count, first slice json. Seals (idempotent) and returns the final state.
local function ss_seal(keys, args)
  if redis.call('EXISTS', keys[1]) == 0 then
    redis.call('HSET', keys[1], 'open', '0', 'submitted', 0, 'added', 0, 'a0', 0)
    redis.call('DEL', keys[2])
    redis.call('RPUSH', keys[2], args[3])
  else
    redis.call('HSET', keys[1], 'open', '0')
  end
  return state_of(keys, args)
end

-- The frontier's partition streams of a scope: at least n of them (KEYS of the scope's slot).
local function raise_queues(key, n)
  if tonumber(redis.call('GET', key) or '1') < n then redis.call('SET', key, n) end
end

-- KEYS: scope record, epochs, queues. ARGV: record json, epoch number, entry json, partitions. First creator wins.
local function ss_create(keys, args)
  local existing = redis.call('GET', keys[1])
  if existing then
    -- Rewritten as it is: a write, so that a WAIT behind this call covers the record.
    redis.call('SET', keys[1], existing)
    return {'exists', existing}
  end
  raise_queues(keys[3], tonumber(args[4]))
  redis.call('SET', keys[1], args[1])
  redis.call('HSET', keys[2], args[2], args[3])
  return {'created', args[1]}
end

-- KEYS: scope record, epochs, queues. ARGV: record json, most partitions, then pairs of epoch number and entry json.
local function ss_create_many(keys, args)
  if redis.call('EXISTS', keys[1]) == 1 then return 'exists' end
  raise_queues(keys[3], tonumber(args[2]))
  redis.call('SET', keys[1], args[1])
  for i = 3, #args, 2 do redis.call('HSET', keys[2], args[i], args[i + 1]) end
  return 'created'
end

-- KEYS: scope record, epochs, queues. ARGV: epoch the caller rotates, sealed entry, next number, next entry, new record, next's partitions.
local function ss_rotate(keys, args)
  local record = redis.call('GET', keys[1])
  if not record then return {'missing'} end
  local open = cjson.decode(record).openEpoch
  if open ~= tonumber(args[1]) then return {'moved', open} end
  raise_queues(keys[3], tonumber(args[6]))
  redis.call('HSET', keys[2], args[1], args[2], args[3], args[4])
  redis.call('SET', keys[1], args[5])
  return {'ok'}
end

-- KEYS: an open epoch's plan list. ARGV: slices the caller found in it, the spec (JSON) of the next.
-- Appends it unless another caller planned that slice first (every partition grows into the same
-- slices); returns the whole plan.
local function ss_plan(keys, args)
  if redis.call('LLEN', keys[1]) == tonumber(args[1]) then redis.call('RPUSH', keys[1], args[2]) end
  return redis.call('LRANGE', keys[1], 0, -1)
end

-- KEYS: state, slices of a partition. ARGV: slices assumed, filter key base, then JSON
-- [[slice spec json, index of its first filter, [bytes of each of its filters]], ...]: the partition
-- grows into those slices (a merge bringing bits of slices it had not grown into).
local function ss_extend(keys, args)
  if redis.call('EXISTS', keys[1]) == 0 then return {'missing'} end
  local have = redis.call('LLEN', keys[2])
  if have ~= tonumber(args[1]) then return {'stale', have} end
  for _, slice in ipairs(cjson.decode(args[3])) do
    redis.call('RPUSH', keys[2], slice[1])
    for f, bytes in ipairs(slice[3]) do allocate(args[2] .. (slice[2] + f - 1), bytes) end
  end
  return {'ok'}
end

-- KEYS: format, scopes. ARGV: the key layout this version writes. The store's layout version:
-- set on first use; 'none' for a store whose scopes were created before layouts were versioned.
local function ss_format(keys, args)
  local v = redis.call('GET', keys[1])
  if v then return v end
  if redis.call('SCARD', keys[2]) > 0 then return 'none' end
  redis.call('SET', keys[1], args[1])
  return args[1]
end

-- KEYS: epochs, drops. ARGV: epoch number. Moves the entry to the drops (gone for readers).
local function ss_drop(keys, args)
  local entry = redis.call('HGET', keys[1], args[1])
  if not entry then return false end
  redis.call('HSET', keys[2], args[1], entry)
  redis.call('HDEL', keys[1], args[1])
  return entry
end

-- KEYS: state, slices. ARGV: slices assumed, filter count, filter key base, then one temporary key per filter.
-- ORs each temporary key into its filter, deletes them; returns the bit counts before and after.
local function ss_merge(keys, args)
  local open = redis.call('HGET', keys[1], 'open')
  if open ~= '1' then return {'sealed'} end
  local have = redis.call('LLEN', keys[2])
  if have ~= tonumber(args[1]) then return {'stale', have} end
  local before, after = {}, {}
  for f = 0, tonumber(args[2]) - 1 do
    local key = args[3] .. f
    local tmp = args[4 + f]
    before[#before + 1] = redis.call('BITCOUNT', key)
    if redis.call('EXISTS', tmp) == 1 then
      redis.call('BITOP', 'OR', key, key, tmp)
      redis.call('DEL', tmp)
    end
    after[#after + 1] = redis.call('BITCOUNT', key)
  end
  return {'ok', before, after}
end

redis.register_function('ss_version', ss_version)
redis.register_function('ss_add', ss_add)
redis.register_function{function_name = 'ss_has', callback = ss_has, flags = {'no-writes'}}
redis.register_function('ss_init', ss_init)
redis.register_function('ss_count_add', ss_count_add)
redis.register_function{function_name = 'ss_count', callback = ss_count, flags = {'no-writes'}}
redis.register_function('ss_count_delete', ss_count_delete)
redis.register_function('ss_alloc', ss_alloc)
redis.register_function{function_name = 'ss_state', callback = ss_state, flags = {'no-writes'}}
redis.register_function('ss_seal', ss_seal)
redis.register_function('ss_create', ss_create)
redis.register_function('ss_create_many', ss_create_many)
redis.register_function('ss_rotate', ss_rotate)
redis.register_function('ss_drop', ss_drop)
redis.register_function('ss_merge', ss_merge)
redis.register_function('ss_plan', ss_plan)
redis.register_function('ss_extend', ss_extend)
redis.register_function('ss_format', ss_format)
`;

-- Bloom filter epochs: testing and setting a URL's bits, the add, the membership query, and the
-- life of a partition (created, read, sealed, grown, merged into). The functions never hash and
-- never compute a bit position: positions arrive computed in JS (src/filters/positions.ts) as one
-- binary argument, u32 little-endian Redis bit offsets, URL-major: for URL i, every filter of
-- every slice in filter order, k of them per filter.

-- Whether every filter f0 .. f0 + fn - 1 holds the URL whose positions start at blob byte at. A
-- blocked filter's bits are tested in its view (blocks.lua: read once per batch); a classic
-- filter's bits one GETBIT each, stopping at the first unset one.
local function holds(b, views, at, f0, fn)
  for f = f0, f0 + fn - 1 do
    local p = at + b.offsets[f] * 4
    if b.blocked[f] then
      if not view_holds(views[f], b.blob, p, b.hashes[f]) then return false end
    else
      for _ = 1, b.hashes[f] do
        if redis.call('GETBIT', b.filters[f - 1], u32(b.blob, p)) == 0 then return false end
        p = p + 4
      end
    end
  end
  return true
end

-- Sets a URL's k bits in filter f: a blocked filter's in its view (written back at the end of the
-- batch), a classic filter's by one BITFIELD of k SETs (a call per bit cost most of the script).
local function set_bits(b, views, at, f)
  local p = at + b.offsets[f] * 4
  if b.blocked[f] then return view_set(views[f], b.blob, p, b.hashes[f]) end
  local ops = {}
  for _ = 1, b.hashes[f] do
    ops[#ops + 1] = 'SET'
    ops[#ops + 1] = 'u1'
    ops[#ops + 1] = u32(b.blob, p)
    ops[#ops + 1] = 1
    p = p + 4
  end
  redis.call('BITFIELD', b.filters[f - 1], unpack(ops))
end

-- KEYS and ARGV: see batch.lua. Decides the batch's URLs in order: a URL no slice holds is new,
-- and its bits are set in the newest slice (growing first when it is full).
local function ss_add(keys, args)
  local early, b = batch_begin(keys, args)
  if early then return early end
  local first, count, added = b.first, b.count, b.added
  local cur, flags, fresh = b.have, {}, 0
  local views = views_read(b)
  for i = 0, b.n - 1 do
    local at = i * b.per_url * 4 + 1
    local seen = false
    for s = 1, cur do
      if holds(b, views, at, first[s], count[s]) then
        seen = true
        break
      end
    end
    if seen then
      flags[i + 1] = '0'
    else
      local grown = grow_if_full(b, cur)
      if grown ~= cur then views_grown(b, views, grown) end
      cur = grown
      for f = first[cur], first[cur] + count[cur] - 1 do set_bits(b, views, at, f) end
      flags[i + 1] = '1'
      fresh = fresh + 1
      added[cur] = added[cur] + 1
    end
  end
  views_write(views)
  return batch_end(keys, args, b, cur, flags, fresh)
end

-- What the read-only functions (ss_has, ss_count) share. KEYS: state, slices, the filters. ARGV:
-- slices assumed, n, geometry json, positions. Returns (reply) when there is nothing to read: a
-- missing partition holds nothing, a changed one is 'stale'; else (nil, the decoded call).
local function read_begin(keys, args, none)
  local n = tonumber(args[2])
  local open = redis.call('HGET', keys[1], 'open')
  if not open then return {'ok', string.rep(none, n)} end
  local have = redis.call('LLEN', keys[2])
  if have ~= tonumber(args[1]) then return {'stale', have} end
  local geo = cjson.decode(args[3])
  local per_url, first, count, hashes, offsets, blocked = layout(geo)
  return nil, {
    n = n, have = have, geo = geo, blob = args[4], filters = filter_keys(keys, 3), per_url = per_url,
    first = first, count = count, hashes = hashes, offsets = offsets, blocked = blocked,
  }
end

-- Per URL '1' when some slice holds it, else '0'.
local function ss_has(keys, args)
  local early, b = read_begin(keys, args, '0')
  if early then return early end
  local flags, views = {}, views_read(b)
  for i = 0, b.n - 1 do
    local at = i * b.per_url * 4 + 1
    local seen = '0'
    for s = 1, b.have do
      if holds(b, views, at, b.first[s], b.count[s]) then
        seen = '1'
        break
      end
    end
    flags[i + 1] = seen
  end
  return {'ok', table.concat(flags)}
end

-- KEYS: state, slices, the first slice's filters. ARGV: first slice json, open flag, then the byte
-- size of each of those filters. Creates the partition's state and filters unless it exists.
local function ss_init(keys, args)
  if redis.call('EXISTS', keys[1]) == 1 then return 'exists' end
  redis.call('HSET', keys[1], 'open', args[2], 'submitted', 0, 'added', 0, 'a0', 0)
  redis.call('DEL', keys[2])
  redis.call('RPUSH', keys[2], args[1])
  for i = 3, #args do allocate(keys[i], tonumber(args[i])) end
  return 'created'
end

-- KEYS: one key. ARGV: bytes. A zero string of exactly that size (before writing it in pieces).
local function ss_alloc(keys, args)
  redis.call('DEL', keys[1])
  allocate(keys[1], tonumber(args[1]))
  return 'ok'
end

-- KEYS: state, slices, the filters. The state's fields, the slice specs, and every filter's bit count.
local function state_of(keys)
  local ones = {}
  for i = 3, #keys do ones[#ones + 1] = redis.call('BITCOUNT', keys[i]) end
  return {redis.call('HGETALL', keys[1]), redis.call('LRANGE', keys[2], 0, -1), ones}
end

local function ss_state(keys)
  return state_of(keys)
end

-- KEYS: state, slices, the filters whose bit counts to return. ARGV: first slice json. Seals
-- (idempotent) and returns the final state.
local function ss_seal(keys, args)
  if redis.call('EXISTS', keys[1]) == 0 then
    redis.call('HSET', keys[1], 'open', '0', 'submitted', 0, 'added', 0, 'a0', 0)
    redis.call('DEL', keys[2])
    redis.call('RPUSH', keys[2], args[1])
  else
    redis.call('HSET', keys[1], 'open', '0')
  end
  return state_of(keys)
end

-- KEYS: state, slices of a partition, its filters (of every slice up to the last it grows into).
-- ARGV: slices assumed, then JSON [[slice spec json, index of its first filter, [bytes of each of
-- its filters]], ...]: the partition grows into those slices (a merge bringing bits of slices it
-- had not grown into).
local function ss_extend(keys, args)
  if redis.call('EXISTS', keys[1]) == 0 then return {'missing'} end
  local have = redis.call('LLEN', keys[2])
  if have ~= tonumber(args[1]) then return {'stale', have} end
  local filters = filter_keys(keys, 3)
  for _, slice in ipairs(cjson.decode(args[2])) do
    redis.call('RPUSH', keys[2], slice[1])
    for f, bytes in ipairs(slice[3]) do allocate(filters[slice[2] + f - 1], bytes) end
  end
  return {'ok'}
end

-- KEYS: state, slices, the F filters, then one temporary key per filter. ARGV: slices assumed, F.
-- ORs each temporary key into its filter, deletes them; returns the bit counts before and after.
local function ss_merge(keys, args)
  local open = redis.call('HGET', keys[1], 'open')
  if open ~= '1' then return {'sealed'} end
  local have = redis.call('LLEN', keys[2])
  if have ~= tonumber(args[1]) then return {'stale', have} end
  local before, after = {}, {}
  local filters = tonumber(args[2])
  for f = 1, filters do
    local key = keys[2 + f]
    local incoming = keys[2 + filters + f]
    before[#before + 1] = redis.call('BITCOUNT', key)
    if redis.call('EXISTS', incoming) == 1 then
      redis.call('BITOP', 'OR', key, key, incoming)
      redis.call('DEL', incoming)
    end
    after[#after + 1] = redis.call('BITCOUNT', key)
  end
  return {'ok', before, after}
end

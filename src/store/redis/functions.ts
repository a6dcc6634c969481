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
 *
 * The frontier (docs/frontier.md "On Redis"): one stream per partition in the partition's slot,
 * consumer group `ss`, a lease sorted set beside it, a done counter, and the answers of frontier
 * calls kept for a retry. ss_add and ss_count_add enqueue what they found new into the stream of
 * their slot in the same call.
 */
export const LIBRARY_VERSION = '14';

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
  for f, spec in ipairs(geo.filters) do
    local s = spec[1] + 1
    if first[s] == nil then first[s] = f; count[s] = 0 end
    count[s] = count[s] + 1
    ks[f] = spec[2]
    blk[f] = spec[3] == 1
    offs[f] = perUrl
    perUrl = perUrl + spec[2]
  end
  return perUrl, first, count, ks, offs, blk
end

-- The filter keys a call declared, KEYS[from] onwards, by filter index from 0: every key a function
-- touches is declared in KEYS (Redis's rule for scripts, which a cluster relies on).
local function filter_keys(keys, from)
  local fk = {}
  for i = from, #keys do fk[i - from] = keys[i] end
  return fk
end

-- Whether every filter f0 .. f0 + fn - 1 holds the URL whose positions start at blob byte at. A
-- blocked filter's block is read once (GETRANGE of its 64 bytes) and its bits tested here; a
-- classic filter's bits one GETBIT each, stopping at the first unset one. Not held by a blocked
-- filter: false and the block read (set_bits writes it back changed).
local function holds(fk, blob, at, f0, fn, ks, offs, blk)
  for f = f0, f0 + fn - 1 do
    local key = fk[f - 1]
    local p = at + offs[f] * 4
    if blk[f] then
      local first = u32(blob, p)
      local base = first - first % 512
      local block = redis.call('GETRANGE', key, base / 8, base / 8 + 63)
      for j = 1, ks[f] do
        local q = u32(blob, p) - base
        local byte = string.byte(block, (q - q % 8) / 8 + 1) or 0
        if bit.band(byte, bit.lshift(1, 7 - q % 8)) == 0 then return false, block end
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
-- block: the block as holds just read it, when nothing was written since (else nil: read here).
local function set_bits(key, blob, p, k, blocked, block)
  if blocked then
    local first = u32(blob, p)
    local base = first - first % 512
    local bytes = {string.byte(block or redis.call('GETRANGE', key, base / 8, base / 8 + 63), 1, 64)}
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
local function scount(fk, blob, at, f, ks, offs)
  local primary, times = cmin(fk[f - 1], blob, at + offs[f] * 4, ks[f])
  if primary == 0 or times >= 2 then return primary end
  local secondary = cmin(fk[f], blob, at + offs[f + 1] * 4, ks[f + 1])
  if secondary > 0 then return math.min(secondary, primary) end
  return primary
end

local function sholds(fk, blob, at, f, ks, offs)
  local primary = cmin(fk[f - 1], blob, at + offs[f] * 4, ks[f])
  return primary > 0
end

local function sadd(fk, blob, at, f, ks, offs)
  local pkey, skey = fk[f - 1], fk[f]
  local pat, sat = at + offs[f] * 4, at + offs[f + 1] * 4
  cadd(pkey, blob, pat, ks[f], 1)
  local pmin, times = cmin(pkey, blob, pat, ks[f])
  if times < 2 then
    local smin = cmin(skey, blob, sat, ks[f + 1])
    if smin > 0 then cadd(skey, blob, sat, ks[f + 1], 1) else cadd(skey, blob, sat, ks[f + 1], pmin) end
  end
end

-- The frontier (docs/frontier.md "On Redis"). A partition's stream holds one entry per queued URL:
-- v (ENTRY_VERSION), u (the URL), e (the epoch it was found new in), d (its data as JSON, when it
-- has some), a (the attempts it had before a release with data queued it again). The consumer
-- group GROUP delivers each entry once (XREADGROUP '>'); a delivered entry stays pending until
-- done. The lease set holds one member per pending entry, its id padded to sort as it orders
-- (padded), scored by the end of its lease in ms (Redis TIME); 0 when it was given back (release,
-- reclaim).
local GROUP = 'ss'
local ENTRY_VERSION = '1'

-- Queue items (encodeQueueItems in redis/frontier.ts): per URL of the batch, a u32 little-endian
-- byte length and the URL, a u32 length and the data (0: none). Decoded before anything is written;
-- nil when the blob does not hold exactly n items.
local function queue_items(blob, n)
  local items, at = {}, 1
  for i = 1, n do
    if at + 3 > #blob then return nil end
    local urlBytes = u32(blob, at)
    local url = string.sub(blob, at + 4, at + 3 + urlBytes)
    at = at + 4 + urlBytes
    if at + 3 > #blob then return nil end
    local dataBytes = u32(blob, at)
    local data = string.sub(blob, at + 4, at + 3 + dataBytes)
    at = at + 4 + dataBytes
    items[i] = {url, data}
  end
  if at ~= #blob + 1 then return nil end
  return items
end

-- Appends the items whose flag is '1' (found new by this batch) to the stream, in batch order;
-- creates the stream and its group with the first.
local function queue_new(qkey, flags, items, epoch)
  local ready = false
  for i = 1, #items do
    if flags[i] == '1' then
      if not ready and redis.call('EXISTS', qkey) == 0 then redis.call('XGROUP', 'CREATE', qkey, GROUP, '0', 'MKSTREAM') end
      ready = true
      local url, data = items[i][1], items[i][2]
      if data == '' then redis.call('XADD', qkey, '*', 'v', ENTRY_VERSION, 'u', url, 'e', epoch)
      else redis.call('XADD', qkey, '*', 'v', ENTRY_VERSION, 'u', url, 'e', epoch, 'd', data) end
    end
  end
end

-- Numbers as whole decimals (Lua's tostring turns large ones into exponent notation).
local function int(x)
  return string.format('%.0f', x)
end

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- A stream id as a lease member: both parts zero-padded to 20 digits, so that members of one score
-- sort in stream order; and back.
local function padded(id)
  local ms, seq = string.match(id, '^(%d+)%-(%d+)$')
  return string.rep('0', 20 - #ms) .. ms .. '-' .. string.rep('0', 20 - #seq) .. seq
end

local function unpadded(member)
  local ms, seq = string.match(member, '^0*(%d-%d)%-0*(%d-%d)$')
  return ms .. '-' .. seq
end

local function fields_of(list)
  local f = {}
  for i = 1, #list, 2 do f[list[i]] = list[i + 1] end
  return f
end

-- One leased entry as take replies it: id, attempts, lease end ms, URL, epoch, data ('' none),
-- entry version ('' none: not an entry these functions wrote).
local function leased(id, f, attempts, untilMs)
  return {id, attempts, untilMs, f.u or '', f.e or '', f.d or '', f.v or ''}
end

-- The pending record of an entry: {id, consumer, idle ms, deliveries}, or nil.
local function pending_of(qkey, id)
  return redis.call('XPENDING', qkey, GROUP, id, id, 1)[1]
end

-- Deletes a consumer that holds nothing (consumers are created by every taker and would pile up).
local function forget_idle(qkey, consumer)
  if #redis.call('XPENDING', qkey, GROUP, '-', '+', 1, consumer) == 0 then redis.call('XGROUP', 'DELCONSUMER', qkey, GROUP, consumer) end
end

-- What every frontier write does first (KEYS[4] its answer key, KEYS[5] the caller's previous
-- answer key, deleted when ARGV[2] is '1'; ARGV[1] the answer's ttl s): the first answer when this
-- call ran already.
local function replayed(keys, args)
  if args[2] == '1' and keys[5] ~= keys[4] then redis.call('DEL', keys[5]) end
  local first = redis.call('GET', keys[4])
  -- A write, so that a WAIT behind this call covers the first one (replication is in order).
  if first then redis.call('EXPIRE', keys[4], tonumber(args[1])) end
  return first
end

local function remember(keys, args, answer)
  redis.call('SET', keys[4], answer, 'EX', tonumber(args[1]))
end

-- A take's entries again, from its remembered answer (id:attempts:lease end per entry), for a retry.
local function retake(qkey, first)
  local out = {}
  for id, attempts, untilMs in string.gmatch(first, '([%d-]+):(%d+):(%d+)') do
    local found = redis.call('XRANGE', qkey, id, id)[1]
    if found then out[#out + 1] = leased(id, fields_of(found[2]), tonumber(attempts), tonumber(untilMs)) end
  end
  return out
end

-- Leases the entries whose lease ran out or was given back, earliest end first (then oldest),
-- claiming each to the consumer (its delivery count is its attempts); at most count.
local function take_expired(qkey, lkey, consumer, count, now, untilMs, out)
  local owners = {}
  for _, member in ipairs(redis.call('ZRANGEBYSCORE', lkey, '-inf', int(now), 'LIMIT', 0, count)) do
    local id = unpadded(member)
    local p = pending_of(qkey, id)
    local claimed = p and redis.call('XCLAIM', qkey, GROUP, consumer, 0, id)[1]
    if type(claimed) == 'table' then
      local f = fields_of(claimed[2])
      out[#out + 1] = leased(id, f, p[4] + 1 + tonumber(f.a or '0'), untilMs)
      redis.call('ZADD', lkey, int(untilMs), member)
      if p[2] ~= consumer then owners[#owners + 1] = p[2] end
    else
      -- Not pending or gone from the stream: never so when every change goes through these functions.
      redis.call('ZREM', lkey, member)
    end
  end
  for _, owner in ipairs(owners) do forget_idle(qkey, owner) end
end

-- KEYS: stream, leases, done counter, answer, previous answer. ARGV: answer ttl s, '1' to delete the previous answer, count,
-- lease ms, consumer. Leases up to count entries: first those waiting again (take_expired), then
-- never delivered ones in stream order. Replies the leased entries (see leased).
local function ss_q_take(keys, args)
  local qkey, lkey = keys[1], keys[2]
  local first = replayed(keys, args)
  if first then return retake(qkey, first) end
  local out = {}
  if redis.call('EXISTS', qkey) == 1 then
    local count, consumer = tonumber(args[3]), args[5]
    local now = now_ms()
    local untilMs = now + tonumber(args[4])
    take_expired(qkey, lkey, consumer, count, now, untilMs, out)
    if #out < count then
      local read = redis.call('XREADGROUP', 'GROUP', GROUP, consumer, 'COUNT', count - #out, 'STREAMS', qkey, '>')
      if read then
        for _, e in ipairs(read[1][2]) do
          local f = fields_of(e[2])
          out[#out + 1] = leased(e[1], f, 1 + tonumber(f.a or '0'), untilMs)
          redis.call('ZADD', lkey, int(untilMs), padded(e[1]))
        end
      end
    end
    forget_idle(qkey, consumer)
  end
  local ids = {}
  for i, e in ipairs(out) do ids[i] = e[1] .. ':' .. int(e[2]) .. ':' .. int(e[3]) end
  remember(keys, args, table.concat(ids, ','))
  return out
end

-- KEYS: stream, leases, done counter, answer, previous answer. ARGV: answer ttl s, '1' to delete the previous answer, ids. Finishes
-- the entries that are queued (waiting or leased): acknowledged, deleted, their lease gone; counts them.
local function ss_q_done(keys, args)
  local qkey, lkey = keys[1], keys[2]
  local first = replayed(keys, args)
  if first then return tonumber(first) end
  local n = 0
  if redis.call('EXISTS', qkey) == 1 then
    local owners = {}
    for i = 3, #args do
      local id = args[i]
      local p = pending_of(qkey, id)
      if p then
        redis.call('XACK', qkey, GROUP, id)
        owners[p[2]] = true
      end
      if redis.call('XDEL', qkey, id) == 1 then n = n + 1 end
      redis.call('ZREM', lkey, padded(id))
    end
    for owner in pairs(owners) do forget_idle(qkey, owner) end
    if n > 0 then redis.call('INCRBY', keys[3], n) end
  end
  remember(keys, args, n)
  return n
end

-- KEYS: stream, leases, done counter, answer, previous answer. ARGV: answer ttl s, '1' to delete the previous answer, n, n ids, n data
-- ('' keeps the entry's). Gives back entries taken and not given back since: waiting at once. With
-- data, the entry is queued again with it at the end of the stream (a stream entry cannot change),
-- carrying its attempts, and the old one acknowledged and deleted. Counts them.
local function ss_q_release(keys, args)
  local qkey, lkey = keys[1], keys[2]
  local first = replayed(keys, args)
  if first then return tonumber(first) end
  local n, count = 0, tonumber(args[3])
  local owners = {}
  for i = 1, count do
    local id, data = args[3 + i], args[3 + count + i]
    local member = padded(id)
    local score = redis.call('ZSCORE', lkey, member)
    if score and tonumber(score) > 0 then
      n = n + 1
      if data == '' then
        redis.call('ZADD', lkey, 0, member)
      else
        local p = pending_of(qkey, id)
        local found = redis.call('XRANGE', qkey, id, id)[1]
        if p and found then
          local f = fields_of(found[2])
          redis.call('XADD', qkey, '*', 'v', ENTRY_VERSION, 'u', f.u, 'e', f.e, 'd', data, 'a', int(p[4] + tonumber(f.a or '0')))
          redis.call('XACK', qkey, GROUP, id)
          redis.call('XDEL', qkey, id)
          owners[p[2]] = true
        end
        redis.call('ZREM', lkey, member)
      end
    end
  end
  for owner in pairs(owners) do forget_idle(qkey, owner) end
  remember(keys, args, n)
  return n
end

-- KEYS: stream, leases, done counter, answer, previous answer. ARGV: answer ttl s, '1' to delete the previous answer, consumer.
-- Every running lease of the consumer ends now (given back); counts them.
local function ss_q_reclaim(keys, args)
  local qkey, lkey = keys[1], keys[2]
  local first = replayed(keys, args)
  if first then return tonumber(first) end
  local n = 0
  if redis.call('EXISTS', qkey) == 1 then
    local now = now_ms()
    local from = '-'
    repeat
      local page = redis.call('XPENDING', qkey, GROUP, from, '+', 1000, args[3])
      for _, p in ipairs(page) do
        local member = padded(p[1])
        local score = redis.call('ZSCORE', lkey, member)
        if score and tonumber(score) > now then
          redis.call('ZADD', lkey, 0, member)
          n = n + 1
        end
      end
      if #page > 0 then from = '(' .. page[#page][1] end
    until #page < 1000
  end
  remember(keys, args, n)
  return n
end

-- KEYS: stream, leases, done counter. Waiting (never taken, given back, or lease run out), leased
-- (lease running), done: from the stream's length, a count over the lease set and the counter.
local function ss_q_stats(keys, args)
  local queued = 0
  if redis.call('EXISTS', keys[1]) == 1 then queued = redis.call('XLEN', keys[1]) end
  local leases = redis.call('ZCOUNT', keys[2], '(' .. int(now_ms()), '+inf')
  return {queued - leases, leases, tonumber(redis.call('GET', keys[3]) or '0')}
end

-- What ss_add and ss_count_add do first: a retried batch gets its first answers back; a sealed,
-- missing or changed epoch, or a batch larger than the planned slices can take, is refused; else
-- the batch's decoded arguments and each slice's added count. Returns (reply) or (nil, batch).
local function batch_begin(keys, args)
  local state, slices, batch = keys[1], keys[2], keys[3]
  if args[6] == '1' and keys[4] ~= batch then redis.call('DEL', keys[4]) end
  local done = redis.call('GET', batch)
  if done then
    -- A write, so that a WAIT behind this call covers the batch (replication is in order).
    redis.call('EXPIRE', batch, tonumber(args[5]))
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
  local items = nil
  if args[7] then
    items = queue_items(args[7], n)
    if not items then return {'malformed'} end
  end
  local perUrl, first, count, ks, offs, blk = layout(geo)
  return nil, {
    state = state, slices = slices, batch = batch, have = have, n = n, geo = geo, planned = planned, added = added, items = items,
    blob = args[4], fk = filter_keys(keys, 6), perUrl = perUrl, first = first, count = count, ks = ks, offs = offs, blk = blk,
  }
end

-- A batch's newest slice (cur) when it is full and a planned slice is left: the next is appended to
-- the partition's slices and its filters allocated. Returns the slice new URLs now go to.
local function grow_if_full(b, cur)
  if b.added[cur] < b.geo.caps[cur] or cur >= b.planned then return cur end
  redis.call('RPUSH', b.slices, b.geo.planned[cur - b.have + 1])
  cur = cur + 1
  for f = b.first[cur], b.first[cur] + b.count[cur] - 1 do allocate(b.fk[f - 1], b.geo.bytes[f]) end
  return cur
end

-- What ss_add and ss_count_add do last: the batch's counts, the enqueue of its new URLs (when
-- asked: KEYS[5] the stream, ARGV[7] the items, ARGV[8] the epoch), its answers kept for a retry.
local function batch_end(keys, args, b, cur, flags, fresh)
  local counts = {}
  for j = 1, cur do
    counts[#counts + 1] = 'a' .. (j - 1)
    counts[#counts + 1] = b.added[j]
  end
  redis.call('HSET', b.state, unpack(counts))
  redis.call('HINCRBY', b.state, 'submitted', b.n)
  redis.call('HINCRBY', b.state, 'added', fresh)
  if b.items then queue_new(keys[5], flags, b.items, args[8]) end
  local answers = table.concat(flags)
  redis.call('SET', b.batch, answers, 'EX', tonumber(args[5]))
  return {'ok', answers, cur, b.added[cur]}
end

-- As ss_add, for a counting epoch: each URL is counted in the oldest slice that holds it; a URL no
-- slice holds goes to the newest (growing first when it is full) and is new.
local function ss_count_add(keys, args)
  local early, b = batch_begin(keys, args)
  if early then return early end
  local blob, fk, perUrl, first, ks, offs, added = b.blob, b.fk, b.perUrl, b.first, b.ks, b.offs, b.added
  local cur, flags, fresh = b.have, {}, 0
  for i = 0, b.n - 1 do
    local at = i * perUrl * 4 + 1
    local home = 0
    for s = 1, cur do
      if sholds(fk, blob, at, first[s], ks, offs) then home = s; break end
    end
    if home == 0 then
      cur = grow_if_full(b, cur)
      home = cur
      flags[i + 1] = '1'
      fresh = fresh + 1
      added[cur] = added[cur] + 1
    else
      flags[i + 1] = '0'
    end
    sadd(fk, blob, at, first[home], ks, offs)
  end
  return batch_end(keys, args, b, cur, flags, fresh)
end

-- KEYS: state, slices, the filters. ARGV: slices assumed, n, geometry, positions. Per URL its
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
  local fk = filter_keys(keys, 3)
  local out = {}
  for i = 0, n - 1 do
    local at = i * perUrl * 4 + 1
    local c = 0
    for s = 1, have do
      c = scount(fk, blob, at, first[s], ks, offs)
      if c > 0 then break end
    end
    out[i + 1] = string.char(c)
  end
  return {'ok', table.concat(out)}
end

-- KEYS: state, slices, batch, previous batch, the filters. ARGV as ss_count, then batch ttl, '1' to
-- delete the previous batch's answers. One occurrence of each
-- URL out of the slice that holds it; returns how many were deleted.
local function ss_count_delete(keys, args)
  if args[6] == '1' and keys[4] ~= keys[3] then redis.call('DEL', keys[4]) end
  local done = redis.call('GET', keys[3])
  if done then
    redis.call('EXPIRE', keys[3], tonumber(args[5]))
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
  local fk = filter_keys(keys, 5)
  local perUrl, first, count, ks, offs, blk = layout(geo)
  local deleted = 0
  for i = 0, n - 1 do
    local at = i * perUrl * 4 + 1
    for s = 1, have do
      local f = first[s]
      if sholds(fk, blob, at, f, ks, offs) then
        local pkey, pat = fk[f - 1], at + offs[f] * 4
        csub(pkey, blob, pat, ks[f])
        local _, times = cmin(pkey, blob, pat, ks[f])
        local sat = at + offs[f + 1] * 4
        if times < 2 and cmin(fk[f], blob, sat, ks[f + 1]) > 0 then csub(fk[f], blob, sat, ks[f + 1]) end
        deleted = deleted + 1
        break
      end
    end
  end
  redis.call('SET', keys[3], tostring(deleted), 'EX', tonumber(args[5]))
  return {'ok', tostring(deleted)}
end

local function ss_version(keys, args)
  return VERSION
end

-- KEYS: state, slices, batch, previous batch, the partition's stream, the filters (of every slice the
-- geometry names). ARGV: slices assumed, n, geometry json, positions, batch ttl s, '1' to delete the
-- previous batch's answers[, queue items, epoch number]: with the items, the new URLs are enqueued
-- (queue_new).
local function ss_add(keys, args)
  local early, b = batch_begin(keys, args)
  if early then return early end
  local blob, fk, perUrl, first, count, ks, offs, blk, added = b.blob, b.fk, b.perUrl, b.first, b.count, b.ks, b.offs, b.blk, b.added
  local cur, flags, fresh = b.have, {}, 0
  for i = 0, b.n - 1 do
    local at = i * perUrl * 4 + 1
    local seen, newest = false, nil
    for s = 1, cur do
      local held, block = holds(fk, blob, at, first[s], count[s], ks, offs, blk)
      if held then seen = true; break end
      -- The newest slice's block, when it is one filter: the set below needs no second read.
      if s == cur and count[s] == 1 then newest = block end
    end
    if seen then
      flags[i + 1] = '0'
    else
      local grown = grow_if_full(b, cur)
      -- A new slice: its block is all zeros, not the one read above.
      if grown ~= cur then newest = nil end
      cur = grown
      for f = first[cur], first[cur] + count[cur] - 1 do
        set_bits(fk[f - 1], blob, at + offs[f] * 4, ks[f], blk[f], newest)
      end
      flags[i + 1] = '1'
      fresh = fresh + 1
      added[cur] = added[cur] + 1
    end
  end
  return batch_end(keys, args, b, cur, flags, fresh)
end

-- KEYS: state, slices, the filters. ARGV: slices assumed, n, geometry json, positions
local function ss_has(keys, args)
  local n = tonumber(args[2])
  local open = redis.call('HGET', keys[1], 'open')
  if not open then return {'ok', string.rep('0', n)} end
  local have = redis.call('LLEN', keys[2])
  if have ~= tonumber(args[1]) then return {'stale', have} end
  local geo = cjson.decode(args[3])
  local blob = args[4]
  local perUrl, first, count, ks, offs, blk = layout(geo)
  local fk = filter_keys(keys, 3)
  local flags = {}
  for i = 0, n - 1 do
    local at = i * perUrl * 4 + 1
    local seen = '0'
    for s = 1, have do
      if holds(fk, blob, at, first[s], count[s], ks, offs, blk) then seen = '1'; break end
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

-- KEYS: state, slices, the filters. Counts and bit counts of every filter.
local function state_of(keys, args)
  local v = redis.call('HGETALL', keys[1])
  local ones = {}
  for i = 3, #keys do ones[#ones + 1] = redis.call('BITCOUNT', keys[i]) end
  return {v, redis.call('LRANGE', keys[2], 0, -1), ones}
end

local function ss_state(keys, args)
  return state_of(keys, args)
end

-- KEYS: state, slices, the filters whose bit counts to return. ARGV: first slice json. Seals (idempotent) and returns the final state.
local function ss_seal(keys, args)
  if redis.call('EXISTS', keys[1]) == 0 then
    redis.call('HSET', keys[1], 'open', '0', 'submitted', 0, 'added', 0, 'a0', 0)
    redis.call('DEL', keys[2])
    redis.call('RPUSH', keys[2], args[1])
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

-- KEYS: state, slices of a partition, its filters (of every slice up to the last it grows into).
-- ARGV: slices assumed, then JSON
-- [[slice spec json, index of its first filter, [bytes of each of its filters]], ...]: the partition
-- grows into those slices (a merge bringing bits of slices it had not grown into).
local function ss_extend(keys, args)
  if redis.call('EXISTS', keys[1]) == 0 then return {'missing'} end
  local have = redis.call('LLEN', keys[2])
  if have ~= tonumber(args[1]) then return {'stale', have} end
  local fk = filter_keys(keys, 3)
  for _, slice in ipairs(cjson.decode(args[2])) do
    redis.call('RPUSH', keys[2], slice[1])
    for f, bytes in ipairs(slice[3]) do allocate(fk[slice[2] + f - 1], bytes) end
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
    local tmp = keys[2 + filters + f]
    before[#before + 1] = redis.call('BITCOUNT', key)
    if redis.call('EXISTS', tmp) == 1 then
      redis.call('BITOP', 'OR', key, key, tmp)
      redis.call('DEL', tmp)
    end
    after[#after + 1] = redis.call('BITCOUNT', key)
  end
  return {'ok', before, after}
end

-- Read-only functions are no-writes, so that they run on a master out of memory (maxmemory, noeviction);
-- ss_format writes one small key, once per store: allow-oom, so that a full store still opens.
redis.register_function{function_name = 'ss_version', callback = ss_version, flags = {'no-writes'}}
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
redis.register_function{function_name = 'ss_format', callback = ss_format, flags = {'allow-oom'}}
redis.register_function('ss_q_take', ss_q_take)
redis.register_function('ss_q_done', ss_q_done)
redis.register_function('ss_q_release', ss_q_release)
redis.register_function('ss_q_reclaim', ss_q_reclaim)
redis.register_function{function_name = 'ss_q_stats', callback = ss_q_stats, flags = {'no-writes'}}
`;

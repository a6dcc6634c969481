-- The frontier's queues, one partition of them per slot (docs/redis.md "Frontier"): a queue lives
-- wholly in the partition its key hashes to, so its politeness state changes atomically with its
-- entries. Every key is declared: per-queue order comes from members of shared sorted sets that
-- start with the queue's prefix (its key's byte length in 4 digits, then the key), so one
-- ZRANGEBYLEX reads one queue.
--
-- KEYS of every queue function (fkeys): seq (entry ids), ent (hash id -> entry JSON), url (hash
-- URL -> id), qs (hash queue key -> queue JSON), w (waiting entries: prefix, due ms in 15 digits,
-- place in 15, id in 12), l (leased entries: prefix, id), leases (id scored by lease end ms), ready (queue key
-- scored by the time it is ready), names (queue keys that hold entries, lexical), inbox marks
-- (hash source partition -> last inbox id admitted), counts (hash n, done, failed), cfg (hash rev), and
-- for the calls answered once, answer and previous answer. ARGV always begins with the settings:
-- their revision, the default delay ms, the in-flight limit (0: none).
--
-- An entry: u URL, q queue key, e epoch, t due ms, n its place among entries due at once (its
-- place in the add or schedule that queued it), a attempts, l lease end ms (0: not leased), o
-- owner, d data (JSON text). A queue: c completed, d own delay ms, b blocked until ms, l crawl
-- limit, t last take ms.

local DUE_DIGITS = 15
local PLACE_DIGITS = 15
local ID_DIGITS = 12
-- Above any byte of a member's digits: the end of a queue's range.
local TOP = '\255'

local function fkeys(keys)
  return {
    seq = keys[1], ent = keys[2], url = keys[3], qs = keys[4], w = keys[5], l = keys[6], leases = keys[7],
    ready = keys[8], names = keys[9], marks = keys[10], counts = keys[11], cfg = keys[12],
    answer = keys[13], previous = keys[14],
  }
end

local function digits(n, width)
  return string.format('%0' .. width .. '.0f', n)
end

local function prefix(key)
  return string.format('%04d', #key) .. key
end

local function waiting_member(key, e, id)
  return prefix(key) .. digits(e.t, DUE_DIGITS) .. digits(e.n or 0, PLACE_DIGITS) .. digits(id, ID_DIGITS)
end

local function leased_member(key, id)
  return prefix(key) .. digits(id, ID_DIGITS)
end

-- The members of one queue in a lexical set, at most `limit` (-1: all), below `upper` if given.
local function members(set, key, limit, upper)
  local p = prefix(key)
  return redis.call('ZRANGEBYLEX', set, '[' .. p, upper and ('(' .. p .. upper) or ('[' .. p .. TOP), 'LIMIT', 0, limit)
end

local function member_count(set, key)
  local p = prefix(key)
  return redis.call('ZLEXCOUNT', set, '[' .. p, '[' .. p .. TOP)
end

-- The id at the end of a member.
local function member_id(member)
  return tonumber(string.sub(member, -ID_DIGITS))
end

-- A field of a hash of JSON values, decoded (nil when absent); and written.
local function json_get(hash, field)
  local json = redis.call('HGET', hash, field)
  return json and cjson.decode(json)
end

local function json_put(hash, field, value)
  redis.call('HSET', hash, field, cjson.encode(value))
end

local function entry_get(F, id) return json_get(F.ent, id) end
local function entry_put(F, id, e) json_put(F.ent, id, e) end
local function queue_get(F, key) return json_get(F.qs, key) end
local function queue_put(F, key, q) json_put(F.qs, key, q) end

local function queue_of(F, key)
  return queue_get(F, key) or {c = 0}
end

-- How many more of the queue's entries may be out on lease (politeness.lua), and how many are.
local function room(F, key, q)
  local leased = member_count(F.l, key)
  return queue_room(F.inflight, leased, q.c, q.l), leased
end

-- When take may next hand the queue out (politeness.lua); nil when nothing in it could be.
local function ready_at(F, key, q)
  local r = room(F, key, q)
  if r == 0 then return nil end
  local first = members(F.w, key, 1)[1]
  if not first then return nil end
  local due = tonumber(string.sub(first, #prefix(key) + 1, #prefix(key) + DUE_DIGITS))
  return queue_ready_at(due, q.t, q.d, F.delay, q.b, r)
end

-- After any change of a queue: its place in names (holds entries) and ready (its ready time).
local function refresh(F, key, q)
  q = q or queue_get(F, key)
  if member_count(F.w, key) + member_count(F.l, key) > 0 then
    redis.call('ZADD', F.names, 0, key)
  else
    redis.call('ZREM', F.names, key)
  end
  local at = q and ready_at(F, key, q)
  if at then redis.call('ZADD', F.ready, int(at), key) else redis.call('ZREM', F.ready, key) end
end

local function lease(F, id, e, until_ms, owner)
  redis.call('ZREM', F.w, waiting_member(e.q, e, id))
  redis.call('ZADD', F.l, 0, leased_member(e.q, id))
  redis.call('ZADD', F.leases, int(until_ms), id)
  e.l, e.o, e.a = until_ms, owner, e.a + 1
end

-- Out of the queue's sets (waiting or leased): the entry is then put back, moved or deleted.
local function detach(F, id, e)
  redis.call('ZREM', F.w, waiting_member(e.q, e, id))
  redis.call('ZREM', F.l, leased_member(e.q, id))
  redis.call('ZREM', F.leases, id)
end

local function attach(F, id, e)
  e.l, e.o = 0, nil
  redis.call('ZADD', F.w, 0, waiting_member(e.q, e, id))
end

local function unlease(F, id, e)
  detach(F, id, e)
  attach(F, id, e)
end

local function insert(F, url, key, epoch, due, place, data, created)
  local id = redis.call('INCR', F.seq)
  local e = {u = url, q = key, e = epoch, t = due, n = place, a = 0, l = 0, c = created}
  if data ~= '' then e.d = data end
  entry_put(F, id, e)
  redis.call('HSET', F.url, url, id)
  redis.call('ZADD', F.w, 0, waiting_member(key, e, id))
  if redis.call('HEXISTS', F.qs, key) == 0 then queue_put(F, key, {c = 0}) end
  redis.call('HINCRBY', F.counts, 'n', 1)
end

local function remove(F, id, e)
  detach(F, id, e)
  redis.call('HDEL', F.ent, id)
  if redis.call('HGET', F.url, e.u) == tostring(id) then redis.call('HDEL', F.url, e.u) end
  redis.call('HINCRBY', F.counts, 'n', -1)
end

-- Done: the entry leaves (or waits for its refetch time, attempts from 0), and counts as
-- completed in its queue; in the counts hash as done, or as failed when it was given up on.
local function finish(F, id, e, refetch_ms, failed)
  local q = queue_of(F, e.q)
  q.c = q.c + 1
  queue_put(F, e.q, q)
  redis.call('HINCRBY', F.counts, failed and 'failed' or 'done', 1)
  if refetch_ms > 0 then
    detach(F, id, e)
    e.t, e.n, e.a = refetch_ms, 0, 0
    attach(F, id, e)
    entry_put(F, id, e)
  else
    remove(F, id, e)
  end
  refresh(F, e.q, q)
end

-- Every lease that ended by now given back (waiting again at its due time); touched queues refreshed.
local function sweep(F, now)
  local touched = {}
  repeat
    local ids = redis.call('ZRANGEBYSCORE', F.leases, '-inf', int(now), 'LIMIT', 0, 1000)
    for _, id in ipairs(ids) do
      local e = entry_get(F, id)
      if e then
        unlease(F, id, e)
        entry_put(F, id, e)
        touched[e.q] = true
      else
        redis.call('ZREM', F.leases, id)
      end
    end
  until #ids < 1000
  for key in pairs(touched) do refresh(F, key) end
end

-- The settings of ARGV[1..3]; a revision the partition has not seen re-times every queue (a new
-- default delay or in-flight limit), then ended leases are given back. Returns the keys and now.
local function fbegin(keys, args)
  local F = fkeys(keys)
  F.delay, F.inflight = tonumber(args[2]), tonumber(args[3])
  if redis.call('HGET', F.cfg, 'rev') ~= args[1] then
    redis.call('HSET', F.cfg, 'rev', args[1])
    for _, key in ipairs(redis.call('ZRANGE', F.names, 0, -1)) do refresh(F, key) end
  end
  local now = now_ms()
  sweep(F, now)
  return F, now
end

-- A queue's counts and settings as the client reads them: waiting, leased, completed, own delay
-- (-1: none), blocked until, crawl limit (-1: none), ready at (-1: never).
local function queue_stats(F, key, q)
  local _, leased = room(F, key, q)
  return {member_count(F.w, key), leased, q.c, q.d or -1, q.b or 0, q.l or -1, ready_at(F, key, q) or -1}
end

-- The frontier's queues, one partition of them per slot (docs/redis.md "Frontier"): a queue lives
-- wholly in the partition its key hashes to, so its politeness state changes atomically with its
-- entries. Every key is declared, and the same ones in every call (queue-store.lua): no key is
-- named after a queue.
--
-- Where a waiting entry is kept, in order (due time, then place, then entry number):
-- - an admitted URL (the common case: due when its add found it new) in its queue's FIFO, a list
--   of entry numbers in chunks, appended in order (rarely merged near the tail, when moves deliver
--   an add out of time order) and taken from the head;
-- - a scheduled one, and one given back after a lease (released, reclaimed, its lease ended), in
--   the partition's sorted set s, whose members sort by queue, then due time, place and number.
-- A take merges the two in order. An entry that leaves its FIFO other than from the head (a
-- schedule, a purge) leaves its number behind, dropped once it reaches the head (fifo_settle): a
-- number is in its FIFO while its record says IN_FIFO.

local function before(t1, n1, id1, t2, n2, id2)
  if t1 ~= t2 then return t1 < t2 end
  if n1 ~= n2 then return n1 < n2 end
  return id1 < id2
end

-- Appends entries (sorted {id, t, n}) to the queue's FIFO, in order: entries of the FIFO's tail
-- that come after the first of them (an add moved out of time order) are taken off and merged back.
local function fifo_append(F, q, items)
  if #items == 0 then return end
  local first, back = items[1], {}
  if q.h == nil then
    q.h, q.z = 1, 1
  else
    while true do
      local ids = chunk_get(F, q.qn, q.z)
      local id = ids[#ids]
      if id == nil then
        if q.z == q.h then break end
        chunk_set(F, q.qn, q.z, nil)
        q.z = q.z - 1
      else
        local r = record_get(F, id)
        local live = r and r.st == IN_FIFO
        if live and before(r.t, r.n, id, first.t, first.n, first.id) then break end
        ids[#ids] = nil
        chunk_set(F, q.qn, q.z, ids)
        if live then back[#back + 1] = {id = id, t = r.t, n = r.n} end
      end
    end
  end
  local ids = chunk_get(F, q.qn, q.z)
  local i, j = 1, #back
  while items[i] or back[j] do
    local a, b = items[i], back[j]
    local take = b == nil or (a ~= nil and before(a.t, a.n, a.id, b.t, b.n, b.id))
    if #ids >= FIFO_CHUNK_ENTRIES then
      chunk_set(F, q.qn, q.z, ids)
      q.z = q.z + 1
      ids = {}
    end
    ids[#ids + 1] = take and a.id or b.id
    if take then i = i + 1 else j = j - 1 end
  end
  chunk_set(F, q.qn, q.z, ids)
end

-- A position in the queue's FIFO, from its head: at() is the entry number there (nil past the
-- end), next() moves on, commit() drops every number before the position (taken, or of entries
-- that left the FIFO). Reads only what it passes: a take of n reads about n numbers.
local function fifo_cursor(F, q)
  local cur = {c = q.h, at = 1}
  local blob = q.h and chunk_blob(F, q.qn, q.h) or ''
  function cur.at_id()
    while cur.c do
      if cur.at <= #blob then
        local v
        v, cur.after = read_varint(blob, cur.at)
        cur.id = cur.at == 1 and v or cur.prev + unzigzag(v)
        return cur.id
      end
      if cur.c >= q.z then return nil end
      cur.c, cur.at = cur.c + 1, 1
      blob = chunk_blob(F, q.qn, cur.c)
    end
  end
  function cur.next()
    cur.prev, cur.at = cur.id, cur.after
  end
  function cur.commit()
    if cur.c == nil then return end
    -- Past chunks it used up, then the number at the position becomes its chunk's first.
    local id = cur.at_id()
    if cur.c == q.h and cur.at == 1 then return end
    for gone = q.h, cur.c - 1 do chunk_set(F, q.qn, gone, nil) end
    q.h = cur.c
    if cur.at > 1 then chunk_set(F, q.qn, cur.c, nil, id and (varint(id) .. string.sub(blob, cur.after)) or '') end
  end
  return cur
end

-- The head of the queue's FIFO is a live entry (numbers of entries that left are dropped), and
-- fd its due time; a FIFO with no live entry has no chunk left.
local function fifo_settle(F, q)
  q.fd = nil
  if q.h == nil then return end
  if q.f == 0 then
    for c = q.h, q.z do chunk_set(F, q.qn, c, nil) end
    q.h, q.z = nil, nil
    return
  end
  local cur = fifo_cursor(F, q)
  for id in cur.at_id do
    local r = record_get(F, id)
    if r and r.st == IN_FIFO then
      cur.commit()
      q.fd = r.t
      return
    end
    cur.next()
  end
  error('seenstore: a frontier queue counts ' .. q.f .. ' entries in its FIFO and holds none')
end

-- The FIFO's live entries from the head: peek() gives an entry number and its record (nil: no
-- more), skip() passes it; commit() drops what was passed (taken, or entries that had left).
local function fifo_reader(F, q)
  local cur = fifo_cursor(F, q)
  local reader = {commit = cur.commit, skip = cur.next}
  function reader.peek()
    for id in cur.at_id do
      local r = record_get(F, id)
      if r and r.st == IN_FIFO then return id, r end
      cur.next()
    end
  end
  return reader
end

-- The sorted set s: per member the queue number (4 bytes), due ms (6), place (7), entry number (6).
local function set_member(r, id)
  return be(r.qn, 4) .. be(r.t, 6) .. be(r.n, 7) .. be(id, 6)
end

local function set_parse(member)
  return {t = read_be(member, 5, 6), n = read_be(member, 11, 7), id = read_be(member, 18, 6)}
end

-- Up to `limit` of queue qn's members (-1: all), those due by `now` when given.
local function set_range(F, qn, limit, now)
  local upper = now and ('(' .. be(qn, 4) .. be(now + 1, 6)) or ('(' .. be(qn + 1, 4))
  return redis.call('ZRANGEBYLEX', F.s, '[' .. be(qn, 4), upper, 'LIMIT', 0, limit)
end

local function set_due_count(F, qn, now)
  return redis.call('ZLEXCOUNT', F.s, '[' .. be(qn, 4), '(' .. be(qn, 4) .. be(now + 1, 6))
end

-- Out of where the entry is (FIFO, set or lease); its queue's counts follow.
local function detach(F, id, r, q)
  if r.st == IN_FIFO then
    q.f = q.f - 1
  elseif r.st == IN_SET then
    redis.call('ZREM', F.s, set_member(r, id))
    q.s = q.s - 1
  else
    redis.call('ZREM', F.leases, int(id))
    q.k = q.k - 1
  end
  touch(F, r.q)
end

-- Waiting in the set at its due time and place (given back, rescheduled).
local function to_set(F, id, r, q)
  r.st, r.l, r.o = IN_SET, 0, nil
  redis.call('ZADD', F.s, 0, set_member(r, id))
  q.s = q.s + 1
  record_put(F, id, r)
  touch(F, r.q)
end

local function lease(F, id, r, q, until_ms, owner)
  detach(F, id, r, q)
  r.st, r.l, r.o, r.a = LEASED, until_ms, owner, r.a + 1
  redis.call('ZADD', F.leases, int(until_ms), int(id))
  q.k = q.k + 1
  record_put(F, id, r)
end

local function unlease(F, id, r, q)
  detach(F, id, r, q)
  to_set(F, id, r, q)
end

-- Entry id (from seq), new, of queue `key`: in its FIFO (the caller appends it: fifo_append) or in
-- the set. h: the URL's hash, when index_find gave it.
local function insert(F, id, url, h, key, epoch, due, place, data, created, where)
  local q = queue_of(F, key)
  local r = {st = where, qn = q.qn, q = key, u = url, e = epoch, t = due, n = place, a = 0, l = 0, c = created}
  if data ~= '' then r.d = data end
  index_add(F, url, id, h)
  F.entries = F.entries + 1
  if where == IN_SET then
    to_set(F, id, r, q)
  else
    q.f = q.f + 1
    record_put(F, id, r)
    touch(F, key)
  end
end

local function remove(F, id, r, q)
  detach(F, id, r, q)
  record_delete(F, id)
  index_remove(F, r.u, id, r.h)
  F.entries = F.entries - 1
end

-- Done: the entry leaves (or waits for its refetch time, attempts from 0), and counts as
-- completed in its queue; in the counts hash as done, or as failed when it was given up on.
local function finish(F, id, r, refetch_ms, failed)
  local q = queue_of(F, r.q)
  q.c = q.c + 1
  touch(F, r.q)
  redis.call('HINCRBY', F.counts, failed and 'failed' or 'done', 1)
  if refetch_ms > 0 then
    detach(F, id, r, q)
    r.t, r.n, r.a = refetch_ms, 0, 0
    to_set(F, id, r, q)
  else
    remove(F, id, r, q)
  end
end

-- When take may next hand the queue out (politeness.lua); nil when nothing in it could be. The
-- FIFO's head is settled: q.fd is its due time.
local function ready_at(F, q)
  local r = queue_room(F.inflight, q.k, q.c, q.l)
  if r == 0 then return nil end
  local due = q.f > 0 and q.fd or nil
  if q.s > 0 then
    local first = set_range(F, q.qn, 1)[1]
    local t = first and set_parse(first).t
    if t and (due == nil or t < due) then due = t end
  end
  return queue_ready_at(due, q.t, q.d, F.delay, q.b, r)
end

-- A queue's member of the ready set: its last take (nil: never) + 1 in 14 digits, then its key.
-- Queues ready at the same ms then come in the take order of politeness.ts (compareReady): the
-- one taken longest ago first, then by key, so a partition's first n ready queues (ss_fq_ready)
-- are the first n of that order. The member changes only when q.t does, in a take (take_queue
-- removes the old one).
local function ready_member(key, last_take)
  return string.format('%014.0f', (last_take or -1) + 1) .. key
end

-- After any change of a queue: its place in names (holds entries) and ready (its ready time).
local function refresh(F, key, q)
  if q.f + q.s + q.k > 0 then redis.call('ZADD', F.names, 0, key) else redis.call('ZREM', F.names, key) end
  local at = ready_at(F, q)
  local member = ready_member(key, q.t)
  if at then redis.call('ZADD', F.ready, int(at), member) else redis.call('ZREM', F.ready, member) end
end

-- The end of every call that writes: each queue it changed settled, re-timed and stored, then
-- everything else written back.
local function fflush(F)
  for key in pairs(F.touched) do
    local q = queue_get(F, key)
    if q then
      fifo_settle(F, q)
      refresh(F, key, q)
      redis.call('HSET', F.qr, key, cjson.encode(q))
    end
  end
  F.touched = {}
  write_back(F)
end

-- Every lease that ended by now given back (waiting again at its due time, in the set).
local function sweep(F, now)
  repeat
    local ids = redis.call('ZRANGEBYSCORE', F.leases, '-inf', int(now), 'LIMIT', 0, 1000)
    for _, member in ipairs(ids) do
      local id = tonumber(member)
      local r = record_get(F, id)
      if r and r.st == LEASED then
        unlease(F, id, r, queue_of(F, r.q))
      else
        redis.call('ZREM', F.leases, member)
      end
    end
  until #ids < 1000
end

-- The form of the ready set's members (cfg `rm`): 2, the last take and the queue key (ready_member).
local READY_MEMBERS = '2'

-- The settings of ARGV[1..3]; a revision the partition has not seen re-times every queue (a new
-- default delay or in-flight limit), then ended leases are given back. Returns the call's view of
-- the partition (written back already) and now.
local function fbegin(keys, args)
  local F = fkeys(keys)
  F.delay, F.inflight = tonumber(args[2]), tonumber(args[3])
  local rev, members = unpack(redis.call('HMGET', F.cfg, 'rev', 'rm'))
  if members ~= READY_MEMBERS then
    -- A ready set of plain queue keys (before its members held the last take, or left by layout 2):
    -- rebuilt from the queues once.
    redis.call('DEL', F.ready)
    rev = false
  end
  if rev ~= args[1] then
    redis.call('HSET', F.cfg, 'rev', args[1], 'rm', READY_MEMBERS)
    for _, key in ipairs(redis.call('ZRANGE', F.names, 0, -1)) do touch(F, key) end
  end
  local now = now_ms()
  sweep(F, now)
  fflush(F)
  return F, now
end

-- A queue's counts and settings as the client reads them: waiting, leased, completed, own delay
-- (-1: none), blocked until, crawl limit (-1: none), ready at (-1: never).
local function queue_stats(F, q)
  return {q.f + q.s, q.k, q.c, q.d or -1, q.b or 0, q.l or -1, ready_at(F, q) or -1}
end

-- An entry as the client reads it (frontier-records.ts StoredEntry): JSON.
local function entry_json(r)
  return cjson.encode({u = r.u, q = r.q, e = r.e, t = r.t, a = r.a, l = r.l, d = r.d, c = r.c})
end

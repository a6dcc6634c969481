-- Moving a partition of a frontier of key layout 2 into layout 3 (docs/redis.md "Frontier"), a
-- batch of entries per call: each call moves its entries whole (written in layout 3, deleted from
-- layout 2, in one atomic step), so a migration killed anywhere goes on where it stopped, and
-- movers may race. Entry numbers stay (a URL leased before the migration is finished by its id
-- after it). Layout 2 kept per entry a JSON record in `ent` (u URL, q queue key, e epoch, t due, n
-- place, a attempts, l lease end, o owner, d data, c created), its URL in `url`, a member in `w`
-- (waiting: the queue's prefix, due in 15 digits, place in 15, number in 12) or in `l` (leased:
-- the prefix, the number), and per queue a JSON record in `qs` (c completed, d own delay, b
-- blocked until, l crawl limit, t last take). seq, leases, ready, names, marks, counts and cfg
-- mean the same in both layouts and stay.

local function old_id(member)
  return tonumber(string.sub(member, -12))
end

-- The layout 3 record of queue `key`, made from its layout 2 record the first time.
local function migrated_queue(F, old, key)
  local q = queue_get(F, key)
  if q then return q end
  q = queue_of(F, key)
  local json = redis.call('HGET', old.qs, key)
  if json then
    local was = cjson.decode(json)
    q.c, q.d, q.b, q.l, q.t = was.c or 0, was.d, was.b, was.l, was.t
  end
  return q
end

-- Entry id of layout 2 (its JSON `e`) written in layout 3, where: LEASED (it stays in leases),
-- IN_SET, or IN_FIFO (appended by the caller, in order: fifo[key] collects it); then deleted from
-- layout 2's entry and URL hashes.
local function migrate_entry(F, old, id, e, where, fifo)
  local q = migrated_queue(F, old, e.q)
  local r = {st = where, qn = q.qn, q = e.q, u = e.u, e = e.e, t = e.t, n = e.n or 0, a = e.a, l = 0, c = e.c or e.t}
  if type(e.d) == 'string' then r.d = e.d end
  index_add(F, r.u, id)
  if where == LEASED then
    r.l, r.o = e.l, e.o
    q.k = q.k + 1
    record_put(F, id, r)
  elseif where == IN_SET then
    to_set(F, id, r, q)
  else
    q.f = q.f + 1
    record_put(F, id, r)
    fifo[e.q] = fifo[e.q] or {}
    table.insert(fifo[e.q], {id = id, t = r.t, n = r.n})
  end
  touch(F, e.q)
  redis.call('HDEL', old.ent, id)
  if redis.call('HGET', old.url, e.u) == tostring(id) then redis.call('HDEL', old.url, e.u) end
end

local function old_entry(old, id)
  local json = redis.call('HGET', old.ent, id)
  return json and cjson.decode(json)
end

-- About `count` fields of a hash (HSCAN from its start until it found some: a hash whose first
-- buckets were emptied answers a page with none).
local function some_fields(key, count)
  local cursor, fields = '0', {}
  repeat
    local reply = redis.call('HSCAN', key, cursor, 'COUNT', count)
    cursor = reply[1]
    for i = 1, #reply[2], 2 do fields[#fields + 1] = reply[2][i] end
  until cursor == '0' or #fields >= count
  return fields
end

-- KEYS: the layout 3 keys (fkeys), then layout 2's ent, url, qs, w, l. ARGV: settings, the most
-- entries (or queue records) to move. Moves leased entries, then waiting ones in their order (a
-- due entry into its queue's FIFO, a scheduled one into the set), then entries no set held, then
-- the records of queues without entries; once nothing is left, deletes layout 2's keys. Replies
-- how many it moved and how many are left.
local function ss_fq_migrate(keys, args)
  local F = fkeys(keys)
  F.delay, F.inflight = tonumber(args[2]), tonumber(args[3])
  local old = {ent = keys[14], url = keys[15], qs = keys[16], w = keys[17], l = keys[18]}
  local budget, moved, fifo, now = tonumber(args[4]), 0, {}, now_ms()
  for _, member in ipairs(redis.call('ZRANGE', old.l, 0, budget - 1)) do
    local id = old_id(member)
    local e = old_entry(old, id)
    if e then migrate_entry(F, old, id, e, LEASED, fifo) end
    redis.call('ZREM', old.l, member)
    moved = moved + 1
  end
  if moved < budget then
    for _, member in ipairs(redis.call('ZRANGE', old.w, 0, budget - moved - 1)) do
      local id = old_id(member)
      local e = old_entry(old, id)
      if e then migrate_entry(F, old, id, e, e.t <= now and IN_FIFO or IN_SET, fifo) end
      redis.call('ZREM', old.w, member)
      moved = moved + 1
    end
  end
  if moved < budget and redis.call('EXISTS', old.w, old.l) == 0 then
    for _, field in ipairs(some_fields(old.ent, budget - moved)) do
      local e = old_entry(old, field)
      if e then migrate_entry(F, old, tonumber(field), e, IN_SET, fifo) end
      moved = moved + 1
    end
  end
  if moved < budget and redis.call('EXISTS', old.w, old.l, old.ent) == 0 then
    for _, key in ipairs(some_fields(old.qs, budget - moved)) do
      migrated_queue(F, old, key)
      touch(F, key)
      redis.call('HDEL', old.qs, key)
      moved = moved + 1
    end
  end
  for key, items in pairs(fifo) do fifo_append(F, queue_get(F, key), items) end
  fflush(F)
  local left = redis.call('ZCARD', old.w) + redis.call('ZCARD', old.l) + redis.call('HLEN', old.ent) +
    redis.call('HLEN', old.qs)
  if left == 0 then redis.call('DEL', old.url) end
  return {moved, left}
end

-- The frontier's leases (docs/frontier.md "On Redis"); queue.lua queues the entries. The lease set
-- beside a partition's stream holds one member per pending entry, its id padded to sort as it
-- orders (padded), scored by the end of its lease in ms (Redis TIME); 0 when it was given back
-- (release, reclaim). Every function here: KEYS stream, leases, done counter, answer, previous
-- answer; ARGV answer ttl s, '1' to delete the previous answer, then its own arguments.

-- A stream id as a lease member: both parts zero-padded to 20 digits, so that members of one
-- score sort in stream order; and back.
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
local function leased(id, f, attempts, until_ms)
  return {id, attempts, until_ms, f.u or '', f.e or '', f.d or '', f.v or ''}
end

-- The pending record of an entry: {id, consumer, idle ms, deliveries}, or nil.
local function pending_of(stream, id)
  return redis.call('XPENDING', stream, GROUP, id, id, 1)[1]
end

-- Deletes a consumer that holds nothing (consumers are created by every taker and would pile up).
local function forget_idle(stream, consumer)
  if #redis.call('XPENDING', stream, GROUP, '-', '+', 1, consumer) == 0 then
    redis.call('XGROUP', 'DELCONSUMER', stream, GROUP, consumer)
  end
end

local function frontier_earlier(keys, args)
  return earlier_answer(keys[4], keys[5], args[2] == '1', tonumber(args[1]))
end

local function frontier_keep(keys, args, answer)
  keep_answer(keys[4], answer, tonumber(args[1]))
end

-- A take's entries again, from its remembered answer (id:attempts:lease end per entry), for a retry.
local function retake(stream, earlier)
  local out = {}
  for id, attempts, until_ms in string.gmatch(earlier, '([%d-]+):(%d+):(%d+)') do
    local found = redis.call('XRANGE', stream, id, id)[1]
    if found then out[#out + 1] = leased(id, fields_of(found[2]), tonumber(attempts), tonumber(until_ms)) end
  end
  return out
end

-- Leases the entries whose lease ran out or was given back, earliest end first (then oldest),
-- claiming each to the consumer (its delivery count is its attempts); at most count.
local function take_expired(stream, leases, consumer, count, now, until_ms, out)
  local owners = {}
  for _, member in ipairs(redis.call('ZRANGEBYSCORE', leases, '-inf', int(now), 'LIMIT', 0, count)) do
    local id = unpadded(member)
    local p = pending_of(stream, id)
    local claimed = p and redis.call('XCLAIM', stream, GROUP, consumer, 0, id)[1]
    if type(claimed) == 'table' then
      local f = fields_of(claimed[2])
      out[#out + 1] = leased(id, f, p[4] + 1 + tonumber(f.a or '0'), until_ms)
      redis.call('ZADD', leases, int(until_ms), member)
      if p[2] ~= consumer then owners[#owners + 1] = p[2] end
    else
      -- Not pending or gone from the stream: never so when every change goes through these functions.
      redis.call('ZREM', leases, member)
    end
  end
  for _, owner in ipairs(owners) do forget_idle(stream, owner) end
end

-- ARGV[3..5]: count, lease ms, consumer. Leases up to count entries: first those waiting again
-- (take_expired), then never delivered ones in stream order. Replies the leased entries (leased).
local function ss_q_take(keys, args)
  local stream, leases = keys[1], keys[2]
  local earlier = frontier_earlier(keys, args)
  if earlier then return retake(stream, earlier) end
  local out = {}
  if redis.call('EXISTS', stream) == 1 then
    local count, consumer = tonumber(args[3]), args[5]
    local now = now_ms()
    local until_ms = now + tonumber(args[4])
    take_expired(stream, leases, consumer, count, now, until_ms, out)
    if #out < count then
      local read = redis.call('XREADGROUP', 'GROUP', GROUP, consumer, 'COUNT', count - #out, 'STREAMS', stream, '>')
      if read then
        for _, e in ipairs(read[1][2]) do
          local f = fields_of(e[2])
          out[#out + 1] = leased(e[1], f, 1 + tonumber(f.a or '0'), until_ms)
          redis.call('ZADD', leases, int(until_ms), padded(e[1]))
        end
      end
    end
    forget_idle(stream, consumer)
  end
  local ids = {}
  for i, e in ipairs(out) do ids[i] = e[1] .. ':' .. int(e[2]) .. ':' .. int(e[3]) end
  frontier_keep(keys, args, table.concat(ids, ','))
  return out
end

-- ARGV[3..]: ids. Finishes the entries that are queued (waiting or leased): acknowledged,
-- deleted, their lease gone; counts them.
local function ss_q_done(keys, args)
  local stream, leases = keys[1], keys[2]
  local earlier = frontier_earlier(keys, args)
  if earlier then return tonumber(earlier) end
  local n = 0
  if redis.call('EXISTS', stream) == 1 then
    local owners = {}
    for i = 3, #args do
      local id = args[i]
      local p = pending_of(stream, id)
      if p then
        redis.call('XACK', stream, GROUP, id)
        owners[p[2]] = true
      end
      if redis.call('XDEL', stream, id) == 1 then n = n + 1 end
      redis.call('ZREM', leases, padded(id))
    end
    for owner in pairs(owners) do forget_idle(stream, owner) end
    if n > 0 then redis.call('INCRBY', keys[3], n) end
  end
  frontier_keep(keys, args, n)
  return n
end

-- Queues a leased entry again at the end of the stream with new data (a stream entry cannot
-- change), carrying its attempts; the old one is acknowledged and deleted. Returns its consumer.
local function requeue_with(stream, id, data)
  local p = pending_of(stream, id)
  local found = redis.call('XRANGE', stream, id, id)[1]
  if not (p and found) then return nil end
  local f = fields_of(found[2])
  local attempts = int(p[4] + tonumber(f.a or '0'))
  redis.call('XADD', stream, '*', 'v', ENTRY_VERSION, 'u', f.u, 'e', f.e, 'd', data, 'a', attempts)
  redis.call('XACK', stream, GROUP, id)
  redis.call('XDEL', stream, id)
  return p[2]
end

-- ARGV[3..]: n, n ids, n data ('' keeps the entry's). Gives back entries taken and not given back
-- since: waiting at once; with data, queued again with it (requeue_with). Counts them.
local function ss_q_release(keys, args)
  local stream, leases = keys[1], keys[2]
  local earlier = frontier_earlier(keys, args)
  if earlier then return tonumber(earlier) end
  local n, count = 0, tonumber(args[3])
  local owners = {}
  for i = 1, count do
    local id, data = args[3 + i], args[3 + count + i]
    local member = padded(id)
    local score = redis.call('ZSCORE', leases, member)
    if score and tonumber(score) > 0 then
      n = n + 1
      if data == '' then
        redis.call('ZADD', leases, 0, member)
      else
        local owner = requeue_with(stream, id, data)
        if owner then owners[owner] = true end
        redis.call('ZREM', leases, member)
      end
    end
  end
  for owner in pairs(owners) do forget_idle(stream, owner) end
  frontier_keep(keys, args, n)
  return n
end

-- ARGV[3]: consumer. Every running lease of the consumer ends now (given back); counts them.
local function ss_q_reclaim(keys, args)
  local stream, leases = keys[1], keys[2]
  local earlier = frontier_earlier(keys, args)
  if earlier then return tonumber(earlier) end
  local n = 0
  if redis.call('EXISTS', stream) == 1 then
    local now = now_ms()
    local from = '-'
    repeat
      local page = redis.call('XPENDING', stream, GROUP, from, '+', 1000, args[3])
      for _, p in ipairs(page) do
        local member = padded(p[1])
        local score = redis.call('ZSCORE', leases, member)
        if score and tonumber(score) > now then
          redis.call('ZADD', leases, 0, member)
          n = n + 1
        end
      end
      if #page > 0 then from = '(' .. page[#page][1] end
    until #page < 1000
  end
  frontier_keep(keys, args, n)
  return n
end

-- KEYS: stream, leases, done counter. Waiting (never taken, given back, or lease run out), leased
-- (lease running), done: from the stream's length, a count over the lease set and the counter.
local function ss_q_stats(keys)
  local queued = 0
  if redis.call('EXISTS', keys[1]) == 1 then queued = redis.call('XLEN', keys[1]) end
  local running = redis.call('ZCOUNT', keys[2], '(' .. int(now_ms()), '+inf')
  return {queued - running, running, tonumber(redis.call('GET', keys[3]) or '0')}
end

-- A partition's inbox (docs/redis.md "Frontier"): the add that finds URLs new appends them here,
-- in the same call, so a URL is queued exactly when it is recorded as seen; the frontier then
-- moves them into their queues' partitions (ss_fq_admit in queue-entries.lua). The stream holds
-- one entry per new URL: v (INBOX_VERSION), u (the URL), k (its queue key), e (the epoch it was
-- found new in), b (the add's batch id) and n (the URL's place: queue_items), d (its data as
-- JSON, when it has some). Its id's ms part, Redis's time of the add (now_ms), is when it was queued.

local INBOX_VERSION = '2'

-- The string of `bytes` bytes at byte `at` of a blob, and the byte after it; nil past the end.
local function blob_string(blob, at)
  if at + 3 > #blob then return nil end
  local bytes = u32(blob, at)
  if at + 3 + bytes > #blob then return nil end
  return string.sub(blob, at + 4, at + 3 + bytes), at + 4 + bytes
end

-- Queue items (encodeQueueItems in redis/inbox.ts): per URL of the batch, its place (the client's
-- batch number and its index in the batch, u32 little-endian each: places order the URLs of one
-- client queued in one millisecond), then a u32 byte length and the URL, the same for its queue
-- key and its data (length 0: none). Decoded before anything is written; nil when the blob does not hold
-- exactly n items.
local function queue_items(blob, n)
  local items, at = {}, 1
  for i = 1, n do
    if at + 7 > #blob then return nil end
    local place = u32(blob, at) * 65536 + u32(blob, at + 4)
    local url, key, data
    url, at = blob_string(blob, at + 8)
    if not url then return nil end
    key, at = blob_string(blob, at)
    if not key then return nil end
    data, at = blob_string(blob, at)
    if not data then return nil end
    items[i] = {url, key, data, place}
  end
  if at ~= #blob + 1 then return nil end
  return items
end

-- The id of the inbox's next entries: Redis's own ('*': its TIME) on Redis's clock; on a test's
-- clock, that clock's ms, never below the stream's last id (ids only grow).
local function inbox_id(inbox)
  if not call_now_ms then return '*' end
  local ms = now_ms()
  if redis.call('EXISTS', inbox) == 1 then
    local info = redis.call('XINFO', 'STREAM', inbox)
    for i = 1, #info, 2 do
      if info[i] == 'last-generated-id' then ms = math.max(ms, tonumber(string.match(info[i + 1], '^%d+'))) end
    end
  end
  return int(ms) .. '-*'
end

-- Appends the items whose flag is '1' (found new by this batch) to the inbox, in batch order.
local function queue_new(inbox, flags, items, epoch, batch)
  local id = inbox_id(inbox)
  for i = 1, #items do
    if flags[i] == '1' then
      local url, key, data, place = items[i][1], items[i][2], items[i][3], items[i][4]
      local fields = {'v', INBOX_VERSION, 'u', url, 'k', key, 'e', epoch, 'b', batch, 'n', int(place)}
      if data ~= '' then
        fields[#fields + 1] = 'd'
        fields[#fields + 1] = data
      end
      redis.call('XADD', inbox, id, unpack(fields))
    end
  end
end

-- The frontier's compact encodings (key layout 3, docs/redis.md "Frontier"): unsigned varints
-- (7 bits a byte, low bits first, the top bit set on every byte but the last), zigzag for signed
-- differences, fixed-width big-endian numbers (they sort as bytes: members of a lexical sorted
-- set, URL index entries), and the pages that hold the entries' records. Pure functions of
-- strings and numbers; Lua numbers are doubles, exact up to 2^53, which bounds every number here.

-- Bytes being encoded, reused by every encoder (a call runs alone): one string.char per string
-- made, no table per number.
local SCRATCH = {}

-- Appends n's varint to SCRATCH from position k; returns the next position.
local function put_varint(k, n)
  while n >= 128 do
    local low = n % 128
    SCRATCH[k] = low + 128
    n = (n - low) / 128
    k = k + 1
  end
  SCRATCH[k] = n
  return k + 1
end

local function varint(n)
  if n < 128 then return string.char(n) end
  return string.char(unpack(SCRATCH, 1, put_varint(1, n) - 1))
end

-- The varint at byte `at` and the byte after it; an error (not a guess) past the end.
local function read_varint(s, at)
  local first = string.byte(s, at)
  if first and first < 128 then return first, at + 1 end
  local n, scale = 0, 1
  repeat
    local b = string.byte(s, at)
    if not b then error('seenstore: a frontier record ends inside a number') end
    n = n + (b % 128) * scale
    scale = scale * 128
    at = at + 1
  until b < 128
  return n, at
end

local function zigzag(n)
  return n >= 0 and n * 2 or -n * 2 - 1
end

local function unzigzag(z)
  return z % 2 == 0 and z / 2 or -(z + 1) / 2
end

local function be(n, width)
  for i = width, 1, -1 do
    local b = n % 256
    SCRATCH[i] = b
    n = (n - b) / 256
  end
  -- A number past its field (an entry number past 2^40 in the URL index) is refused, never cut.
  if n ~= 0 then error('seenstore: a frontier number does not fit in ' .. width .. ' bytes') end
  return string.char(unpack(SCRATCH, 1, width))
end

local function read_be(s, at, width)
  local n = 0
  for i = at, at + width - 1 do n = n * 256 + string.byte(s, i) end
  return n
end

-- Entry numbers per page: entry N is in page floor(N / PAGE_ENTRIES), slot N mod PAGE_ENTRIES.
local PAGE_ENTRIES = 32
local PAGE_VERSION = 1
-- Where an entry is: in its queue's FIFO (admitted, never handed out), in the partition's sorted
-- set (scheduled, or given back), or leased.
local IN_FIFO, IN_SET, LEASED = 1, 2, 3
-- A URL is stored whole (form 0), or as what follows one of these and its queue key.
local URL_FORMS = {'https://', 'http://'}

-- A page: its version byte, the due time and place its records are stored relative to, then per
-- record (in slot order) its slot (a byte), its length (varint) and its body. A page keeps its blob
-- as read and, once asked (page_spans), where each record is in it (s, b, e: where the record, its
-- body and its end are); a record is decoded when asked for (recs), and a write copies the
-- unchanged ones as they were.
local function page_spans(page)
  if page.s then return end
  local blob, at = page.blob, page.first
  page.s, page.b, page.e = {}, {}, {}
  while at <= #blob do
    local slot = string.byte(blob, at)
    local length, body = read_varint(blob, at + 1)
    if slot >= PAGE_ENTRIES or body + length - 1 > #blob then
      error('seenstore: ' .. page.where .. ' holds a damaged record')
    end
    page.s[slot], page.b[slot], page.e[slot] = at, body, body + length - 1
    at = body + length
  end
end

local function page_new(where)
  return {blob = '', first = 1, where = where, recs = {}, changed = {}}
end

local function page_decode(blob, where)
  if string.byte(blob, 1) ~= PAGE_VERSION then
    error('seenstore: ' .. where .. ' is a frontier page of version ' .. tostring(string.byte(blob, 1)) ..
      ', not ' .. PAGE_VERSION)
  end
  local page = page_new(where)
  page.blob = blob
  page.due, page.first = read_varint(blob, 2)
  page.place, page.first = read_varint(blob, page.first)
  return page
end

-- The stored body of the record in `slot` (nil: none).
local function page_body(page, slot)
  page_spans(page)
  local b = page.b[slot]
  return b and string.sub(page.blob, b, page.e[slot])
end

-- A record's body: flags (state in bits 0-1, URL form in 2-3, then owner, data and a creation time
-- other than the due time), queue number, epoch, due time and place (zigzag, relative to the
-- page's), attempts, [created, zigzag from due], [lease end], [owner], [data], then the URL or what
-- follows its form and queue key.
local function record_decode(body, page, key_of)
  local flags, at = read_varint(body, 1)
  local r = {st = flags % 4}
  local form = math.floor(flags / 4) % 4
  local v
  r.qn, at = read_varint(body, at)
  r.e, at = read_varint(body, at)
  v, at = read_varint(body, at)
  r.t = page.due + unzigzag(v)
  v, at = read_varint(body, at)
  r.n = page.place + unzigzag(v)
  r.a, at = read_varint(body, at)
  r.c = r.t
  if math.floor(flags / 64) % 2 == 1 then
    v, at = read_varint(body, at)
    r.c = r.t + unzigzag(v)
  end
  r.l = 0
  if r.st == LEASED then r.l, at = read_varint(body, at) end
  if math.floor(flags / 16) % 2 == 1 then
    v, at = read_varint(body, at)
    r.o = string.sub(body, at, at + v - 1)
    at = at + v
  end
  if math.floor(flags / 32) % 2 == 1 then
    v, at = read_varint(body, at)
    r.d = string.sub(body, at, at + v - 1)
    at = at + v
  end
  r.q = key_of(r.qn)
  local rest = string.sub(body, at)
  r.u = form == 0 and rest or (URL_FORMS[form] .. r.q .. rest)
  return r
end

local function record_encode(r, page)
  local form, rest = 0, r.u
  for i, scheme in ipairs(URL_FORMS) do
    local head = scheme .. r.q
    if string.sub(r.u, 1, #head) == head then
      form, rest = i, string.sub(r.u, #head + 1)
      break
    end
  end
  local flags = r.st + form * 4
  if r.o then flags = flags + 16 end
  if r.d then flags = flags + 32 end
  if r.c ~= r.t then flags = flags + 64 end
  local k = put_varint(1, flags)
  k = put_varint(k, r.qn)
  k = put_varint(k, r.e)
  k = put_varint(k, zigzag(r.t - page.due))
  k = put_varint(k, zigzag(r.n - page.place))
  k = put_varint(k, r.a)
  if r.c ~= r.t then k = put_varint(k, zigzag(r.c - r.t)) end
  if r.st == LEASED then k = put_varint(k, r.l) end
  local parts = {string.char(unpack(SCRATCH, 1, k - 1))}
  if r.o then parts[#parts + 1] = varint(#r.o) .. r.o end
  if r.d then parts[#parts + 1] = varint(#r.d) .. r.d end
  parts[#parts + 1] = rest
  return table.concat(parts)
end

-- The page's blob, or nil when it holds no record; the page then is as if read from it.
local function page_encode(page)
  page_spans(page)
  local parts = {string.char(PAGE_VERSION), varint(page.due), varint(page.place)}
  local header, from, to = #parts, nil, nil
  for slot = 0, PAGE_ENTRIES - 1 do
    if page.changed[slot] or page.s[slot] == nil or to == nil or page.s[slot] ~= to + 1 then
      if from then parts[#parts + 1] = string.sub(page.blob, from, to) end
      from, to = nil, nil
    end
    if page.changed[slot] then
      local r = page.recs[slot]
      if r then
        local body = record_encode(r, page)
        parts[#parts + 1] = string.char(slot) .. varint(#body) .. body
      end
    elseif page.s[slot] then
      from, to = from or page.s[slot], page.e[slot]
    end
  end
  if from then parts[#parts + 1] = string.sub(page.blob, from, to) end
  if #parts == header then return nil end
  page.first = #parts[1] + #parts[2] + #parts[3] + 1
  page.blob, page.changed, page.s = table.concat(parts), {}, nil
  return page.blob
end

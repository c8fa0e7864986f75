-- Wireshark dissector for the mdcast wire protocol, version 2 (docs/protocol.md).
--
--   mdcast      datagrams (§1) and every message type (§2): UDP payloads found
--               by heuristics (magic "MC", version 2) or on the data ports.
--   mdcast_ctl  control frames (§3) over TCP, reassembled with dissect_tcp_pdus,
--               on the control ports or found by heuristics; the datagrams of a
--               RetransmitReply and the messages of a SnapshotData are decoded
--               with the same fields as live ones, so `mdcast.seq == 42` finds
--               both the original and its retransmissions.
--   mdcast_ann  the UDP medium's control-address announcement (§6, magic "MA").
--   mdcast_rec  the markers `mdcast record` writes (docs/recording.md); a
--               session marker's clock offset shows the datagrams' send times
--               on the wall clock (mdcast.send_wall).
--
-- Install: tools/wireshark/README.md. Written for Wireshark/tshark 4.0 (Lua 5.2).
-- The control frames live in mdcast_ctl.lua, loaded from this file's folder:
-- `-X lua_script:` names this file only, and Wireshark, which runs every .lua
-- of a plugin folder, finds nothing to register in that one alone.
--
-- Hostile input is the normal case for a capture tool: every length is checked
-- against the bytes present before it is used, and whatever is wrong is an
-- expert item (malformed, bad CRC, count mismatch), never a Lua error.

local mdcast = Proto("mdcast", "mdcast market data")
local mdcast_ctl = Proto("mdcast_ctl", "mdcast control plane")
local mdcast_ann = Proto("mdcast_ann", "mdcast UDP announcement")
local mdcast_rec = Proto("mdcast_rec", "mdcast recording marker")

local DATAGRAM_MAGIC = 0x434d   -- bytes 'M','C'
local DATAGRAM_VERSION = 2
local HEADER = 40
local TAG = 16  -- the trailer of a datagram with flag 0x10
local ANN_MAGIC = 0x414d        -- bytes 'M','A'
local ANN_VERSION = 1
local ANN_SIGNED_VERSION = 2  -- followed by an Ed25519 signature (udp.announce_key_file)
local REC_MAGIC = "MDCREC01"    -- a marker `mdcast record` writes where the sequence breaks (docs/recording.md)
local REC_SIZE = 32
local CTL_HEADER = 12
local CTL_MAX_FRAME = 4 * 1024 * 1024
local CTL_VERSION = 2
local ALL = 0xffffffff
-- The send time's wall clock is shown when it lands in [capture time - 60 s,
-- capture time + 1 ms]: a publisher on another host has another monotonic
-- clock, and the recording host's offset then gives nonsense (the 1 ms only
-- absorbs the rounding of Wireshark's capture time, a double, in Lua).
local WALL_BEFORE_NS, WALL_AFTER_NS = 60 * 1000000000, 1000000

-- The control frames' half (mdcast_ctl.lua), beside this file.
local ctl
do
  local src = debug.getinfo(1, "S").source
  local dir = src:sub(1, 1) == "@" and src:sub(2):match("^(.*[/\\])") or ""
  local chunk, err = loadfile(dir .. "mdcast_ctl.lua")
  if not chunk then error("mdcast.lua needs mdcast_ctl.lua beside it: " .. tostring(err)) end
  ctl = chunk()
end

---------------------------------------------------------------- value names --
local msg_types = {
  [1] = "InstrumentDefinition", [2] = "AddOrder", [3] = "ModifyOrder", [4] = "DeleteOrder",
  [5] = "ExecuteOrder", [6] = "TradingStatus", [7] = "SnapshotChunk", [8] = "Heartbeat",
  [9] = "Fragment", [10] = "Opaque",
}
local sides = { [0] = "buy", [1] = "sell" }
local trading_statuses = { [0] = "pre-open", [1] = "trading", [2] = "halted", [3] = "closed" }
local rec_kinds = { [1] = "gap", [2] = "session", [3] = "image" }
local crc_results = { [0] = "not present", [1] = "good", [2] = "bad", [3] = "not checked" }

--------------------------------------------------------------------- fields --
-- Every field is mdcast's (one protocol to enable, one prefix to filter on);
-- the control and announcement protocols only carry the tree items.
local F = {}
local function field(key, f) F[key] = f end

-- Datagram header (§1.1).
field("magic", ProtoField.uint16("mdcast.magic", "Magic", base.HEX))
field("version", ProtoField.uint8("mdcast.version", "Version", base.DEC))
field("flags", ProtoField.uint8("mdcast.flags", "Flags", base.HEX))
field("flag_unseq", ProtoField.bool("mdcast.flags.unsequenced", "Unsequenced (heartbeat)", 8, nil, 0x01))
field("flag_crc", ProtoField.bool("mdcast.flags.crc", "CRC-32C present", 8, nil, 0x02))
field("flag_eos", ProtoField.bool("mdcast.flags.end_of_session", "End of session", 8, nil, 0x04))
field("flag_filtered", ProtoField.bool("mdcast.flags.filtered", "Filtered copy", 8, nil, 0x08))
field("flag_tag", ProtoField.bool("mdcast.flags.tag", "Tag present (authenticated data)", 8, nil, 0x10))
field("flag_unknown", ProtoField.uint8("mdcast.flags.unknown", "Unknown flag bits", base.HEX, nil, 0xe0))
field("channel", ProtoField.uint16("mdcast.channel", "Channel", base.DEC))
field("message_count", ProtoField.uint16("mdcast.message_count", "Message count", base.DEC))
field("session", ProtoField.uint64("mdcast.session", "Session", base.HEX))
field("seq", ProtoField.uint64("mdcast.seq", "Sequence", base.DEC))
field("send_time", ProtoField.uint64("mdcast.send_time", "Send time (publisher's CLOCK_MONOTONIC, ns)", base.DEC))
field("send_wall", ProtoField.absolute_time("mdcast.send_wall", "Send time (wall clock, from the recording's offset)",
  base.UTC))
field("length", ProtoField.uint16("mdcast.length", "Length", base.DEC))
field("sender", ProtoField.uint16("mdcast.sender", "Sender", base.DEC))
field("crc", ProtoField.uint32("mdcast.crc", "CRC-32C", base.HEX))
field("crc_status", ProtoField.uint8("mdcast.crc.status", "CRC-32C check", base.DEC, crc_results))
field("tag", ProtoField.bytes("mdcast.tag", "Tag (SipHash-2-4-128, session data key; not checked here)"))
field("messages_found", ProtoField.uint16("mdcast.messages_found", "Messages found", base.DEC))

-- Messages (§2). One field per meaning, shared by every type that carries it
-- (an order id is mdcast.msg.order_id in an add, a delete and a snapshot entry).
field("msg_length", ProtoField.uint16("mdcast.msg.length", "Length", base.DEC))
field("msg_type", ProtoField.uint8("mdcast.msg.type", "Type", base.DEC, msg_types))
field("msg_flags", ProtoField.uint8("mdcast.msg.flags", "Flags", base.HEX))
field("instrument", ProtoField.uint32("mdcast.msg.instrument", "Instrument", base.DEC))
field("instrument_seq", ProtoField.uint32("mdcast.msg.instrument_seq", "Instrument sequence", base.DEC))
field("symbol", ProtoField.string("mdcast.msg.symbol", "Symbol"))
field("lot_size", ProtoField.uint32("mdcast.msg.lot_size", "Lot size", base.DEC))
field("price_exponent", ProtoField.int8("mdcast.msg.price_exponent", "Price exponent", base.DEC))
field("order_id", ProtoField.uint64("mdcast.msg.order_id", "Order id", base.DEC))
field("price", ProtoField.int64("mdcast.msg.price", "Price (raw)", base.DEC))
field("price_scaled", ProtoField.double("mdcast.msg.price_scaled", "Price"))
field("quantity", ProtoField.uint32("mdcast.msg.quantity", "Quantity", base.DEC))
field("side", ProtoField.uint8("mdcast.msg.side", "Side", base.DEC, sides))
field("trade_id", ProtoField.uint64("mdcast.msg.trade_id", "Trade id", base.DEC))
field("trading_status", ProtoField.uint8("mdcast.msg.trading_status", "Trading status", base.DEC, trading_statuses))
field("snapshot_seq", ProtoField.uint64("mdcast.msg.snapshot_seq", "Snapshot sequence", base.DEC))
field("chunk_index", ProtoField.uint16("mdcast.msg.chunk_index", "Chunk index", base.DEC))
field("chunk_count", ProtoField.uint16("mdcast.msg.chunk_count", "Chunk count", base.DEC))
field("order_count", ProtoField.uint16("mdcast.msg.order_count", "Order count", base.DEC))
field("last_seq", ProtoField.uint64("mdcast.msg.last_seq", "Last sequence", base.DEC))
field("global_checksum", ProtoField.uint64("mdcast.msg.global_checksum", "Global checksum", base.HEX))
field("instrument_count", ProtoField.uint32("mdcast.msg.instrument_count", "Instrument count", base.DEC))
field("entry_count", ProtoField.uint16("mdcast.msg.entry_count", "Entry count", base.DEC))
field("checksum", ProtoField.uint64("mdcast.msg.checksum", "Book checksum", base.HEX))
field("message_id", ProtoField.uint32("mdcast.msg.message_id", "Message id", base.DEC))
field("fragment_index", ProtoField.uint16("mdcast.msg.fragment_index", "Fragment index", base.DEC))
field("fragment_count", ProtoField.uint16("mdcast.msg.fragment_count", "Fragment count", base.DEC))
field("total_length", ProtoField.uint32("mdcast.msg.total_length", "Reassembled length", base.DEC))
field("payload", ProtoField.bytes("mdcast.msg.payload", "Payload"))

-- Announcement (§6).
field("ann_magic", ProtoField.uint16("mdcast.ann.magic", "Magic", base.HEX))
field("ann_version", ProtoField.uint8("mdcast.ann.version", "Version", base.DEC))
field("ann_address_length", ProtoField.uint8("mdcast.ann.address_length", "Address length", base.DEC))
field("ann_channel", ProtoField.uint16("mdcast.ann.channel", "Channel", base.DEC))
field("ann_reserved", ProtoField.uint16("mdcast.ann.reserved", "Reserved", base.HEX))
field("ann_session", ProtoField.uint64("mdcast.ann.session", "Session", base.HEX))
field("ann_address", ProtoField.string("mdcast.ann.address", "Control address"))
field("ann_signature", ProtoField.bytes("mdcast.ann.signature", "Ed25519 signature"))

-- Recording markers (docs/recording.md), their two u64 values named by kind:
-- gap {first missing, next recorded}, session {id, clock offset}, image
-- {next recorded, last frame}.
field("rec_kind", ProtoField.uint8("mdcast.rec.kind", "Marker", base.DEC, rec_kinds))
field("rec_session", ProtoField.uint64("mdcast.rec.session", "Session", base.HEX))
field("rec_clock_offset", ProtoField.int64("mdcast.rec.clock_offset",
  "Recording host's CLOCK_REALTIME - CLOCK_MONOTONIC (ns; 0: not recorded)", base.DEC))
field("rec_first_missing", ProtoField.uint64("mdcast.rec.first_missing", "First sequence missing", base.DEC))
field("rec_next_seq", ProtoField.uint64("mdcast.rec.next_seq", "Next sequence recorded", base.DEC))
field("rec_last_frame", ProtoField.uint64("mdcast.rec.last_frame", "Last frame of the image (1)", base.DEC))

local M = {
  mdcast = mdcast, mdcast_ctl = mdcast_ctl, F = F, field = field, ALL = ALL, HEADER = HEADER,
  DATAGRAM_MAGIC = DATAGRAM_MAGIC, CTL_HEADER = CTL_HEADER, CTL_MAX_FRAME = CTL_MAX_FRAME, CTL_VERSION = CTL_VERSION,
}
ctl.fields(M)

local list = {}
for _, f in pairs(F) do list[#list + 1] = f end
mdcast.fields = list

local E = {
  short = ProtoExpert.new("mdcast.expert.short", "Shorter than a datagram header (40 bytes)",
    expert.group.MALFORMED, expert.severity.ERROR),
  magic = ProtoExpert.new("mdcast.expert.bad_magic", "Bad magic (expected 0x434d, 'MC')",
    expert.group.MALFORMED, expert.severity.ERROR),
  version = ProtoExpert.new("mdcast.expert.bad_version", "Unsupported version",
    expert.group.MALFORMED, expert.severity.ERROR),
  flags = ProtoExpert.new("mdcast.expert.bad_flags", "Unknown flag bits set (receivers drop the datagram)",
    expert.group.MALFORMED, expert.severity.ERROR),
  length = ProtoExpert.new("mdcast.expert.bad_length", "Length field disagrees with the bytes present",
    expert.group.MALFORMED, expert.severity.ERROR),
  zero_seq = ProtoExpert.new("mdcast.expert.zero_sequence", "Sequenced datagram with sequence 0",
    expert.group.MALFORMED, expert.severity.ERROR),
  crc = ProtoExpert.new("mdcast.expert.bad_crc", "CRC-32C mismatch",
    expert.group.CHECKSUM, expert.severity.ERROR),
  count = ProtoExpert.new("mdcast.expert.bad_count", "Message count disagrees with the messages found",
    expert.group.MALFORMED, expert.severity.ERROR),
  message = ProtoExpert.new("mdcast.expert.bad_message", "Malformed message",
    expert.group.MALFORMED, expert.severity.ERROR),
  unknown_type = ProtoExpert.new("mdcast.expert.unknown_type", "Unknown message type (receivers skip it)",
    expert.group.UNDECODED, expert.severity.NOTE),
  gso = ProtoExpert.new("mdcast.expert.gso", "Several datagrams in one UDP payload (a GSO send captured before segmentation)",
    expert.group.SEQUENCE, expert.severity.CHAT),
  ctl = ProtoExpert.new("mdcast.expert.bad_frame", "Malformed control frame",
    expert.group.MALFORMED, expert.severity.ERROR),
  ctl_stream = ProtoExpert.new("mdcast.expert.bad_stream", "Frame length out of range (12 .. 4 MiB): the receiver closes the connection",
    expert.group.MALFORMED, expert.severity.ERROR),
  ann = ProtoExpert.new("mdcast.expert.bad_announcement", "Malformed announcement (receivers count and ignore it)",
    expert.group.MALFORMED, expert.severity.ERROR),
  rec = ProtoExpert.new("mdcast.expert.bad_marker", "Malformed recording marker",
    expert.group.MALFORMED, expert.severity.ERROR),
  foreign_clock = ProtoExpert.new("mdcast.expert.foreign_clock",
    "Send time not on the recording host's clock (a publisher on another host?): no wall-clock time",
    expert.group.SEQUENCE, expert.severity.NOTE),
}
M.E = E
mdcast.experts = { E.short, E.magic, E.version, E.flags, E.length, E.zero_seq, E.crc, E.count, E.message,
  E.unknown_type, E.gso, E.ctl, E.ctl_stream, E.ann, E.rec, E.foreign_clock }

---------------------------------------------------------------- preferences --
mdcast.prefs.data_ports = Pref.range("UDP data ports", "7470", "UDP ports always decoded as mdcast datagrams " ..
  "(payloads elsewhere are found by their magic)", 65535)
mdcast.prefs.control_ports = Pref.range("TCP control ports", "7471", "TCP ports decoded as mdcast control frames", 65535)
mdcast.prefs.heuristics = Pref.bool("Find mdcast by heuristics",
  true, "Decode UDP payloads starting 'MC' v2 or 'MA' v1 and TCP streams starting with a control frame on any port")
mdcast.prefs.check_crc = Pref.bool("Check CRC-32C", true, "Verify the CRC of datagrams that carry one")
mdcast.prefs.price_exponent = Pref.uint("Default price exponent (negated)", 4,
  "price = raw × 10^-N for instruments whose InstrumentDefinition was not seen (the synthetic feed uses 4)")

------------------------------------------------------------------- CRC-32C --
local crc_table = {}
for i = 0, 255 do
  local c = i
  for _ = 1, 8 do
    if bit32.band(c, 1) ~= 0 then c = bit32.bxor(bit32.rshift(c, 1), 0x82f63b78) else c = bit32.rshift(c, 1) end
  end
  crc_table[i] = c
end
local function crc_update(crc, s)
  local band, bxor, rshift, byte = bit32.band, bit32.bxor, bit32.rshift, string.byte
  for i = 1, #s do
    crc = bxor(crc_table[band(bxor(crc, byte(s, i)), 0xff)], rshift(crc, 8))
  end
  return crc
end
-- CRC-32C of a datagram with its CRC field taken as zero (§1.1).
local function datagram_crc(tvb, off, len)
  local crc = 0xffffffff
  crc = crc_update(crc, tvb:raw(off, 36))
  crc = crc_update(crc, "\0\0\0\0")
  if len > HEADER then crc = crc_update(crc, tvb:raw(off + HEADER, len - HEADER)) end
  return bit32.bnot(crc)
end

------------------------------------------------------------------- messages --
-- Price exponents from the InstrumentDefinitions seen, per instrument, for the
-- scaled price. Captures are read front to back first, so a definition is
-- normally seen before the orders that need it.
local exponents = {}
-- Clock offsets (Int64 ns) from the recordings' session markers, by session
-- (hex): the marker comes before its session's first datagram.
local clock_offsets = {}

local function add_price(t, tvb, off, instrument)
  t:add_le(F.price, tvb(off, 8))
  local exp = exponents[instrument]
  if exp == nil then exp = -mdcast.prefs.price_exponent end
  local raw = tvb(off, 8):le_int64():tonumber()
  t:add(F.price_scaled, tvb(off, 8), raw * 10 ^ exp):set_generated()
end

-- Exact sizes of the fixed-length types (§2.2, §2.3 fixed part).
local fixed_size = { [1] = 36, [2] = 36, [3] = 32, [4] = 20, [5] = 40, [6] = 16 }

-- Decodes one message at tvb(off, len) (len already within the buffer and ≥ 4)
-- into tree t. Returns false when the message is malformed.
local function dissect_message(tvb, pinfo, t, off, len)
  local mtype = tvb(off + 2, 1):uint()
  t:add_le(F.msg_length, tvb(off, 2))
  t:add_le(F.msg_type, tvb(off + 2, 1))
  t:add_le(F.msg_flags, tvb(off + 3, 1))
  local name = msg_types[mtype] or ("type " .. mtype)
  t:append_text(": " .. name)
  local function bad(why)
    t:add_proto_expert_info(E.message, name .. ": " .. why)
    return false
  end
  if fixed_size[mtype] and len ~= fixed_size[mtype] then
    return bad(string.format("length %d, the type's is %d", len, fixed_size[mtype]))
  end
  local md = (mtype >= 1 and mtype <= 7) or mtype == 10
  local instrument
  if md then
    if len < 12 then return bad("length " .. len .. " below the 12-byte market-data header") end
    instrument = tvb(off + 4, 4):le_uint()
    t:add_le(F.instrument, tvb(off + 4, 4))
    t:add_le(F.instrument_seq, tvb(off + 8, 4))
    t:append_text(string.format(" inst %d #%d", instrument, tvb(off + 8, 4):le_uint()))
  end
  if mtype == 1 then
    -- NUL-padded, not NUL-terminated: a 16-character symbol has no NUL, and
    -- TvbRange:stringz() would read on past the field (and the packet).
    local symbol = tvb(off + 12, 16):raw()
    local nul = symbol:find("\0", 1, true)
    if nul then symbol = symbol:sub(1, nul - 1) end
    t:add(F.symbol, tvb(off + 12, 16), symbol)
    t:add_le(F.lot_size, tvb(off + 28, 4))
    t:add_le(F.price_exponent, tvb(off + 32, 1))
    exponents[instrument] = tvb(off + 32, 1):le_int()
    t:append_text(" " .. symbol)
  elseif mtype == 2 then
    t:add_le(F.order_id, tvb(off + 12, 8))
    add_price(t, tvb, off + 20, instrument)
    t:add_le(F.quantity, tvb(off + 28, 4))
    t:add_le(F.side, tvb(off + 32, 1))
    local side = tvb(off + 32, 1):uint()
    if side > 1 then return bad("side " .. side .. " out of range") end
    if tvb(off + 28, 4):le_uint() == 0 then return bad("quantity 0") end
  elseif mtype == 3 then
    t:add_le(F.order_id, tvb(off + 12, 8))
    add_price(t, tvb, off + 20, instrument)
    t:add_le(F.quantity, tvb(off + 28, 4))
  elseif mtype == 4 then
    t:add_le(F.order_id, tvb(off + 12, 8))
  elseif mtype == 5 then
    t:add_le(F.order_id, tvb(off + 12, 8))
    add_price(t, tvb, off + 20, instrument)
    t:add_le(F.quantity, tvb(off + 28, 4))
    t:add_le(F.trade_id, tvb(off + 32, 8))
  elseif mtype == 6 then
    t:add_le(F.trading_status, tvb(off + 12, 1))
    if tvb(off + 12, 1):uint() > 3 then return bad("trading status out of range") end
  elseif mtype == 7 then
    if len < 28 then return bad("length " .. len .. " below the chunk's 28-byte header") end
    t:add_le(F.snapshot_seq, tvb(off + 12, 8))
    t:add_le(F.chunk_index, tvb(off + 20, 2))
    t:add_le(F.chunk_count, tvb(off + 22, 2))
    t:add_le(F.order_count, tvb(off + 24, 2))
    t:add_le(F.trading_status, tvb(off + 26, 1))
    local n = tvb(off + 24, 2):le_uint()
    if len ~= 28 + 24 * n then return bad(string.format("%d orders need %d bytes, length is %d", n, 28 + 24 * n, len)) end
    for i = 0, n - 1 do
      local o = off + 28 + 24 * i
      local et = t:add(mdcast, tvb(o, 24), "Order " .. i)
      et:add_le(F.order_id, tvb(o, 8))
      add_price(et, tvb, o + 8, instrument)
      et:add_le(F.quantity, tvb(o + 16, 4))
      et:add_le(F.side, tvb(o + 20, 1))
    end
    if tvb(off + 20, 2):le_uint() >= tvb(off + 22, 2):le_uint() then return bad("chunk index not below count") end
  elseif mtype == 8 then
    if len < 28 then return bad("length " .. len .. " below the heartbeat's 28-byte header") end
    t:add_le(F.last_seq, tvb(off + 4, 8))
    t:add_le(F.global_checksum, tvb(off + 12, 8))
    t:add_le(F.instrument_count, tvb(off + 20, 4))
    t:add_le(F.entry_count, tvb(off + 24, 2))
    local n = tvb(off + 24, 2):le_uint()
    t:append_text(" last " .. tostring(tvb(off + 4, 8):le_uint64()))
    if len ~= 28 + 16 * n then return bad(string.format("%d entries need %d bytes, length is %d", n, 28 + 16 * n, len)) end
    for i = 0, n - 1 do
      local o = off + 28 + 16 * i
      local et = t:add(mdcast, tvb(o, 16), "Entry " .. i)
      et:add_le(F.instrument, tvb(o, 4))
      et:add_le(F.instrument_seq, tvb(o + 4, 4))
      et:add_le(F.checksum, tvb(o + 8, 8))
    end
  elseif mtype == 9 then
    if len < 20 then return bad("length " .. len .. " below the fragment's 20-byte header") end
    t:add_le(F.instrument, tvb(off + 4, 4))
    t:add_le(F.message_id, tvb(off + 8, 4))
    t:add_le(F.fragment_index, tvb(off + 12, 2))
    t:add_le(F.fragment_count, tvb(off + 14, 2))
    t:add_le(F.total_length, tvb(off + 16, 4))
    if len > 20 then t:add(F.payload, tvb(off + 20, len - 20)) end
    if tvb(off + 14, 2):le_uint() < 2 or tvb(off + 12, 2):le_uint() >= tvb(off + 14, 2):le_uint() then
      return bad("fragment index/count out of range")
    end
  elseif mtype == 10 then
    if len > 12 then t:add(F.payload, tvb(off + 12, len - 12)) end
  else
    if len > 4 then t:add(F.payload, tvb(off + 4, len - 4)) end
    t:add_proto_expert_info(E.unknown_type)
  end
  return true
end

-- Decodes a run of messages filling tvb(off, len); returns how many were found
-- and whether all were well formed.
local function dissect_messages(tvb, pinfo, tree, off, len)
  local found, ok, stop = 0, true, off + len
  while off < stop do
    if stop - off < 4 then
      tree:add_proto_expert_info(E.message, (stop - off) .. " bytes left after the last message")
      return found, false
    end
    local mlen = tvb(off, 2):le_uint()
    if mlen < 4 or mlen > stop - off then
      local t = tree:add(mdcast, tvb(off, stop - off), "Message")
      t:add_le(F.msg_length, tvb(off, 2))
      t:add_proto_expert_info(E.message, string.format("message length %d: below 4 or past the end (%d bytes left)",
        mlen, stop - off))
      return found, false
    end
    local t = tree:add(mdcast, tvb(off, mlen), "Message")
    found = found + 1
    if not dissect_message(tvb, pinfo, t, off, mlen) then ok = false end
    off = off + mlen
  end
  return found, ok
end

------------------------------------------------------------------ datagrams --

-- Decodes the datagram at tvb(off, len) (len ≥ 40, magic already matched).
-- `expect_len` false: the length field was not used to cut the datagram.
local function dissect_datagram(tvb, pinfo, tree, off, len)
  local t = tree:add(mdcast, tvb(off, len), "mdcast datagram")
  local flags = tvb(off + 3, 1):uint()
  t:add_le(F.magic, tvb(off, 2))
  local vi = t:add_le(F.version, tvb(off + 2, 1))
  local fi = t:add_le(F.flags, tvb(off + 3, 1))
  fi:add(F.flag_unseq, tvb(off + 3, 1))
  fi:add(F.flag_crc, tvb(off + 3, 1))
  fi:add(F.flag_eos, tvb(off + 3, 1))
  fi:add(F.flag_filtered, tvb(off + 3, 1))
  fi:add(F.flag_tag, tvb(off + 3, 1))
  fi:add(F.flag_unknown, tvb(off + 3, 1))
  t:add_le(F.channel, tvb(off + 4, 2))
  t:add_le(F.message_count, tvb(off + 6, 2))
  t:add_le(F.session, tvb(off + 8, 8))
  local si = t:add_le(F.seq, tvb(off + 16, 8))
  local ti = t:add_le(F.send_time, tvb(off + 24, 8))
  local offset = clock_offsets[tvb(off + 8, 8):le_uint64():tohex()]
  if offset then
    -- Int64 arithmetic throughout: a double holds a nanosecond time to ~256 ns.
    local wall = Int64(0) + tvb(off + 24, 8):le_uint64() + offset
    local capture = pinfo.abs_ts * 1e9
    local early = capture - wall:tonumber()  -- only compared with bounds, far from its rounding
    if wall >= Int64(0) and early >= -WALL_AFTER_NS and early <= WALL_BEFORE_NS then
      t:add(F.send_wall, tvb(off + 24, 8), NSTime((wall / 1000000000):tonumber(), (wall % 1000000000):tonumber()))
        :set_generated()
    else
      ti:add_proto_expert_info(E.foreign_clock)
    end
  end
  local li = t:add_le(F.length, tvb(off + 32, 2))
  t:add_le(F.sender, tvb(off + 34, 2))
  local ci = t:add_le(F.crc, tvb(off + 36, 4))

  if tvb(off + 2, 1):uint() ~= DATAGRAM_VERSION then vi:add_proto_expert_info(E.version) end
  if bit32.band(flags, 0xe0) ~= 0 then fi:add_proto_expert_info(E.flags) end
  if bit32.band(flags, 0x12) == 0x12 then fi:add_proto_expert_info(E.flags, "a tag and a CRC together") end
  local declared = tvb(off + 32, 2):le_uint()
  if declared ~= len then
    li:add_proto_expert_info(E.length, string.format("length field %d, %d bytes present", declared, len))
  end
  local seq = tvb(off + 16, 8):le_uint64()
  local sequenced = bit32.band(flags, 0x01) == 0
  if sequenced and seq == UInt64(0) then si:add_proto_expert_info(E.zero_seq) end
  if bit32.band(flags, 0x02) ~= 0 then
    if mdcast.prefs.check_crc then
      local want = datagram_crc(tvb, off, len)
      local good = want == tvb(off + 36, 4):le_uint()
      t:add(F.crc_status, tvb(off + 36, 4), good and 1 or 2):set_generated()
      if not good then ci:add_proto_expert_info(E.crc, string.format("CRC-32C is 0x%08x, field says 0x%08x",
        want, tvb(off + 36, 4):le_uint())) end
    else
      t:add(F.crc_status, tvb(off + 36, 4), 3):set_generated()
    end
  else
    t:add(F.crc_status, tvb(off + 36, 4), 0):set_generated()
  end

  -- With a tag (§1.1) the messages end TAG bytes before the datagram does.
  local body = len - HEADER
  if bit32.band(flags, 0x10) ~= 0 and body >= TAG then
    body = body - TAG
    t:add(F.tag, tvb(off + HEADER + body, TAG))
  end
  local count = tvb(off + 6, 2):le_uint()
  local found = dissect_messages(tvb, pinfo, t, off + HEADER, body)
  local mi = t:add(F.messages_found, tvb(off + 6, 2), found):set_generated()
  if found ~= count then
    mi:add_proto_expert_info(E.count, string.format("message_count %d, %d messages found", count, found))
  end
  local what = sequenced and ("seq " .. tostring(seq)) or ("heartbeat last " .. tostring(seq))
  if bit32.band(flags, 0x04) ~= 0 then what = what .. " END" end
  t:append_text(string.format(", ch %d, session 0x%s, %s, %d msgs, %d bytes", tvb(off + 4, 2):le_uint(),
    tvb(off + 8, 8):le_uint64():tohex(), what, count, len))
  return what
end

-- A UDP payload: one datagram, or (a GSO send captured on the sending host,
-- before segmentation) several of equal size back to back, each cut by its
-- own length field. A length that does not lead to the end of the payload or
-- to another header is taken as wrong and the datagram runs to the end.
local function looks_like_header(tvb, off, left)
  return left >= HEADER and tvb(off, 2):le_uint() == DATAGRAM_MAGIC and tvb(off + 2, 1):uint() == DATAGRAM_VERSION
end

local function dissect_udp_payload(tvb, pinfo, tree)
  local total = tvb:len()
  pinfo.cols.protocol = "mdcast"
  local top = tree:add(mdcast, tvb(), "mdcast")
  local off, n, infos = 0, 0, {}
  while off < total do
    local left = total - off
    if left < HEADER then
      local t = top:add(mdcast, tvb(off, left), "mdcast datagram (truncated)")
      t:add_proto_expert_info(E.short, left .. " bytes")
      break
    end
    if tvb(off, 2):le_uint() ~= DATAGRAM_MAGIC then
      local t = top:add(mdcast, tvb(off, left), "mdcast datagram")
      t:add_le(F.magic, tvb(off, 2)):add_proto_expert_info(E.magic)
      break
    end
    local len = tvb(off + 32, 2):le_uint()
    if len < HEADER or len > left or (len < left and not looks_like_header(tvb, off + len, left - len)) then
      len = left
    end
    infos[#infos + 1] = dissect_datagram(tvb, pinfo, top, off, len)
    n = n + 1
    off = off + len
  end
  if n > 1 then top:add_proto_expert_info(E.gso, n .. " datagrams") end
  pinfo.cols.info = "mdcast " .. table.concat(infos, "; ")
  return total
end

--------------------------------------------------------------- announcement --
local function dissect_announcement(tvb, pinfo, tree)
  pinfo.cols.protocol = "mdcast"
  local t = tree:add(mdcast_ann, tvb(), "mdcast announcement")
  local len = tvb:len()
  if len < 16 then
    t:add_proto_expert_info(E.ann, len .. " bytes, below the 16-byte header")
    return len
  end
  t:add_le(F.ann_magic, tvb(0, 2))
  t:add_le(F.ann_version, tvb(2, 1))
  local n = tvb(3, 1):uint()
  local ni = t:add_le(F.ann_address_length, tvb(3, 1))
  t:add_le(F.ann_channel, tvb(4, 2))
  t:add_le(F.ann_reserved, tvb(6, 2))
  t:add_le(F.ann_session, tvb(8, 8))
  local shown = math.min(n, len - 16)
  local address = shown > 0 and tvb(16, shown):string() or ""
  if shown > 0 then t:add(F.ann_address, tvb(16, shown), address) end
  local version = tvb(2, 1):uint()
  local signed = version == ANN_SIGNED_VERSION
  if signed and len >= 16 + n + 64 then t:add(F.ann_signature, tvb(16 + n, 64)) end
  if n < 5 or n > 64 or 16 + n + (signed and 64 or 0) ~= len then
    ni:add_proto_expert_info(E.ann, string.format("address length %d, %d bytes follow the header", n, len - 16))
  end
  if version ~= ANN_VERSION and not signed then t:add_proto_expert_info(E.ann, "version " .. version) end
  pinfo.cols.info = string.format("mdcast announcement ch %d session 0x%s control %s", tvb(4, 2):le_uint(),
    tvb(8, 8):le_uint64():tohex(), address)
  return len
end

---------------------------------------------------------- recording markers --
local function dissect_marker(tvb, pinfo, tree)
  pinfo.cols.protocol = "mdcast"
  local len = tvb:len()
  local t = tree:add(mdcast_rec, tvb(), "mdcast recording marker")
  if len < REC_SIZE then
    t:add_proto_expert_info(E.rec, len .. " bytes, below the 32-byte marker")
    return len
  end
  local kind = tvb(8, 1):uint()
  t:add_le(F.rec_kind, tvb(8, 1))
  local a, b = tvb(16, 8):le_uint64(), tvb(24, 8):le_uint64()
  if kind == 1 then
    t:add_le(F.rec_first_missing, tvb(16, 8))
    t:add_le(F.rec_next_seq, tvb(24, 8))
    pinfo.cols.info = string.format("mdcast recording: gap, sequences %s to %s replaced by a snapshot", a, b - 1)
  elseif kind == 2 then
    t:add_le(F.rec_session, tvb(16, 8))
    t:add_le(F.rec_clock_offset, tvb(24, 8))
    local offset = tvb(24, 8):le_int64()
    if offset ~= Int64(0) then clock_offsets[a:tohex()] = offset end
    pinfo.cols.info = string.format("mdcast recording: session 0x%s begins%s", a:tohex(),
      offset ~= Int64(0) and "" or " (no clock offset: send times stay on the publisher's clock)")
  elseif kind == 3 then
    t:add_le(F.rec_next_seq, tvb(16, 8))
    t:add_le(F.rec_last_frame, tvb(24, 8))
    -- The books as the snapshot left them, as mdcast messages.
    local found = 0
    if len > REC_SIZE then found = dissect_messages(tvb, pinfo, t, REC_SIZE, len - REC_SIZE) end
    t:add(F.messages_found, found):set_generated()
    pinfo.cols.info = string.format("mdcast recording: image before sequence %s, %d messages%s", a, found,
      b == UInt64(1) and " (last)" or "")
  else
    t:add_proto_expert_info(E.rec, "unknown marker kind " .. kind)
  end
  return len
end

---------------------------------------------------------------- UDP entries --
local function udp_kind(tvb)
  if tvb:len() >= 8 and tvb(0, 8):string() == REC_MAGIC then return "rec" end
  if tvb:len() < 3 then return nil end
  local magic, version = tvb(0, 2):le_uint(), tvb(2, 1):uint()
  if magic == DATAGRAM_MAGIC and version == DATAGRAM_VERSION then return "data" end
  if magic == ANN_MAGIC and (version == ANN_VERSION or version == ANN_SIGNED_VERSION) then return "ann" end
  return nil
end

function mdcast.dissector(tvb, pinfo, tree)
  local kind = udp_kind(tvb)
  if kind == "ann" then return dissect_announcement(tvb, pinfo, tree) end
  if kind == "rec" then return dissect_marker(tvb, pinfo, tree) end
  return dissect_udp_payload(tvb, pinfo, tree)
end

local function heur_udp(tvb, pinfo, tree)
  if not mdcast.prefs.heuristics then return false end
  local kind = udp_kind(tvb)
  if kind == "data" and tvb:len() >= HEADER then
    dissect_udp_payload(tvb, pinfo, tree)
    return true
  elseif kind == "ann" and tvb:len() >= 16 then
    dissect_announcement(tvb, pinfo, tree)
    return true
  elseif kind == "rec" then
    dissect_marker(tvb, pinfo, tree)
    return true
  end
  return false
end

--------------------------------------------------------------- registration --
local udp_table = DissectorTable.get("udp.port")
local tcp_table = DissectorTable.get("tcp.port")
local registered_udp, registered_tcp = "", ""

local function register_ports()
  if registered_udp ~= "" then udp_table:remove(registered_udp, mdcast) end
  if registered_tcp ~= "" then tcp_table:remove(registered_tcp, mdcast_ctl) end
  registered_udp, registered_tcp = mdcast.prefs.data_ports, mdcast.prefs.control_ports
  if registered_udp ~= "" then udp_table:add(registered_udp, mdcast) end
  if registered_tcp ~= "" then tcp_table:add(registered_tcp, mdcast_ctl) end
end

function mdcast.init()
  exponents = {}
  clock_offsets = {}
  register_ports()
end

function mdcast.prefs_changed()
  register_ports()
end

M.dissect_datagram, M.dissect_messages = dissect_datagram, dissect_messages
ctl.register()
register_ports()
mdcast:register_heuristic("udp", heur_udp)

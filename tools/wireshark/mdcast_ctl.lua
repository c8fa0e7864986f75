-- mdcast control frames (docs/protocol.md §3) for the Wireshark dissector:
-- fields, the frame decoder and its summaries, TCP registration.
--
-- Not a plugin of its own: mdcast.lua loads it from its own folder, hands it
-- the shared fields, experts and datagram decoder, and calls what it returns.
-- Loaded alone (Wireshark runs every .lua in a plugin folder) it only returns
-- a table, so copying both files to the plugin folder is safe.

local M  -- what mdcast.lua shares: protos, F, E, field(), constants, decoders

local ctl_types = {
  [1] = "Subscribe", [2] = "SubscribeAck", [3] = "Unsubscribe", [4] = "RetransmitRequest",
  [5] = "RetransmitReply", [6] = "SnapshotRequest", [7] = "SnapshotData", [8] = "SnapshotDone",
  [9] = "StatusReport", [10] = "Error", [11] = "AuthHello", [12] = "AuthChallenge", [13] = "AuthProof",
  [14] = "SessionQuery", [15] = "SessionStatus", [16] = "AuthDataKey", [17] = "LatencyReport",
}
local retransmit_statuses = { [0] = "ok", [1] = "too old", [2] = "not yet", [3] = "wrong session" }
local snapshot_statuses = { [0] = "ok", [1] = "not entitled", [2] = "unavailable" }
local error_codes = {
  [1] = "malformed", [2] = "not subscribed", [3] = "not entitled", [4] = "unknown channel",
  [5] = "too large", [6] = "bad credential", [7] = "overloaded", [8] = "unsupported",
}

local function fields()
  local field = M.field
  -- Control frames (§3).
  field("ctl_length", ProtoField.uint32("mdcast.ctl.length", "Length", base.DEC))
  field("ctl_type", ProtoField.uint8("mdcast.ctl.type", "Type", base.DEC, ctl_types))
  field("ctl_version", ProtoField.uint8("mdcast.ctl.version", "Version", base.DEC))
  field("ctl_reserved", ProtoField.uint16("mdcast.ctl.reserved", "Reserved (SubscribeAck: features)", base.HEX))
  field("ctl_accepts_latency", ProtoField.bool("mdcast.ctl.features.latency", "Accepts LatencyReport", 16, nil, 0x0001))
  field("ctl_request_id", ProtoField.uint32("mdcast.ctl.request_id", "Request id", base.DEC))
  field("ctl_channel", ProtoField.uint16("mdcast.ctl.channel", "Channel", base.DEC))
  field("ctl_credential_length", ProtoField.uint16("mdcast.ctl.credential_length", "Credential length (must be 0)", base.DEC))
  field("ctl_sender_id", ProtoField.uint32("mdcast.ctl.sender_id", "Client's sender id", base.DEC))
  field("ctl_instrument_count", ProtoField.uint32("mdcast.ctl.instrument_count", "Instrument count", base.DEC,
    { [M.ALL] = "all" }))
  field("ctl_instrument", ProtoField.uint32("mdcast.ctl.instrument", "Instrument", base.DEC))
  field("ctl_session", ProtoField.uint64("mdcast.ctl.session", "Session", base.HEX))
  field("ctl_last_seq", ProtoField.uint64("mdcast.ctl.last_seq", "Last sequence", base.DEC))
  field("ctl_oldest_seq", ProtoField.uint64("mdcast.ctl.oldest_seq", "Oldest retransmittable sequence", base.DEC))
  field("ctl_granted", ProtoField.uint32("mdcast.ctl.granted", "Instruments granted", base.DEC, { [M.ALL] = "all" }))
  field("ctl_from_seq", ProtoField.uint64("mdcast.ctl.from_seq", "From sequence", base.DEC))
  field("ctl_count", ProtoField.uint32("mdcast.ctl.count", "Count", base.DEC))
  field("ctl_retransmit_status", ProtoField.uint8("mdcast.ctl.retransmit_status", "Status", base.DEC, retransmit_statuses))
  field("ctl_datagram_count", ProtoField.uint32("mdcast.ctl.datagram_count", "Datagram count", base.DEC))
  field("ctl_oldest_available", ProtoField.uint64("mdcast.ctl.oldest_available", "Oldest available", base.DEC))
  field("ctl_datagram_length", ProtoField.uint16("mdcast.ctl.datagram_length", "Datagram length", base.DEC))
  field("ctl_datagrams_found", ProtoField.uint32("mdcast.ctl.datagrams_found", "Datagrams found", base.DEC))
  field("ctl_snapshot_status", ProtoField.uint8("mdcast.ctl.snapshot_status", "Status", base.DEC, snapshot_statuses))
  field("ctl_instruments", ProtoField.uint32("mdcast.ctl.instruments", "Instruments", base.DEC))
  field("ctl_snapshot_seq", ProtoField.uint64("mdcast.ctl.snapshot_seq", "Snapshot sequence", base.DEC))
  field("ctl_position", ProtoField.uint64("mdcast.ctl.position", "Position (next to deliver)", base.DEC))
  field("ctl_lag", ProtoField.uint64("mdcast.ctl.lag", "Lag", base.DEC))
  field("ctl_drops", ProtoField.uint64("mdcast.ctl.drops", "Drops", base.DEC))
  field("ctl_capacity", ProtoField.uint64("mdcast.ctl.capacity", "Capacity (msg/s)", base.DEC))
  field("ctl_latency_count", ProtoField.uint64("mdcast.ctl.latency_count", "Latency samples", base.DEC))
  field("ctl_latency_p50", ProtoField.uint64("mdcast.ctl.latency_p50", "Latency p50 (ns)", base.DEC))
  field("ctl_latency_p99", ProtoField.uint64("mdcast.ctl.latency_p99", "Latency p99 (ns)", base.DEC))
  field("ctl_latency_max", ProtoField.uint64("mdcast.ctl.latency_max", "Latency max (ns)", base.DEC))
  field("ctl_session_flags", ProtoField.uint8("mdcast.ctl.session_flags", "Session flags", base.HEX))
  field("ctl_ended", ProtoField.bool("mdcast.ctl.session_flags.ended", "Ended", 8, nil, 0x01))
  field("ctl_end_seq", ProtoField.uint64("mdcast.ctl.end_seq", "End sequence", base.DEC))
  field("ctl_error_code", ProtoField.uint16("mdcast.ctl.error_code", "Error code", base.DEC, error_codes))
  field("ctl_text_length", ProtoField.uint16("mdcast.ctl.text_length", "Text length", base.DEC))
  field("ctl_text", ProtoField.string("mdcast.ctl.text", "Text"))
  field("ctl_scheme", ProtoField.uint8("mdcast.ctl.scheme", "Scheme", base.DEC, schemes))
  field("ctl_identity_length", ProtoField.uint8("mdcast.ctl.identity_length", "Identity length", base.DEC))
  field("ctl_client_nonce", ProtoField.bytes("mdcast.ctl.client_nonce", "Client nonce"))
  field("ctl_identity", ProtoField.string("mdcast.ctl.identity", "Identity"))
  field("ctl_server_nonce", ProtoField.bytes("mdcast.ctl.server_nonce", "Server nonce"))
  field("ctl_server_proof", ProtoField.bytes("mdcast.ctl.server_proof", "Server proof"))
  field("ctl_client_proof", ProtoField.bytes("mdcast.ctl.client_proof", "Client proof"))
  field("ctl_wrapped_key", ProtoField.bytes("mdcast.ctl.wrapped_key", "Data key, wrapped for this connection"))
  field("ctl_key_check", ProtoField.bytes("mdcast.ctl.key_check", "Data key check"))
end

local function hex64(v) return "0x" .. v:tohex() end
-- A sequence range as "from-last" (one number for one), from a u64 and a count.
local function range(from, count)
  if count == 0 then return tostring(from) .. " (count 0)" end
  if count == 1 then return tostring(from) end
  return string.format("%s-%s", tostring(from), tostring(from + (count - 1)))
end

local F, E

-- An instrument set (§3) into tree t; its summary appended to s.
local function dissect_instrument_set(tvb, t, off, stop, s)
  if stop - off < 4 then return false, "no instrument count" end
  t:add_le(F.ctl_instrument_count, tvb(off, 4))
  local n = tvb(off, 4):le_uint()
  if n == M.ALL then
    s[#s + 1] = "all instruments"
    return off + 4 == stop, "bytes after \"all\""
  end
  if (stop - off - 4) ~= 4 * n then
    s[#s + 1] = n .. " instruments"
    return false, string.format("%d instruments need %d bytes, %d present", n, 4 * n, stop - off - 4)
  end
  local ids = {}
  for i = 0, n - 1 do
    t:add_le(F.ctl_instrument, tvb(off + 4 + 4 * i, 4))
    if i < 8 then ids[#ids + 1] = tostring(tvb(off + 4 + 4 * i, 4):le_uint()) end
  end
  s[#s + 1] = string.format("%d instrument%s%s%s%s", n, n == 1 and "" or "s", n > 0 and " " or "",
    table.concat(ids, ","), n > 8 and ",..." or "")
  return true
end

-- Frame bodies: exact sizes where the protocol fixes one.
local ctl_size = { [2] = 40, [4] = 32, [8] = 36, [9] = 44, [12] = 76, [13] = 44, [14] = 12, [15] = 48, [16] = 68, [17] = 44 }

-- Decodes a frame's body into t and appends its key values to s (what the
-- Info column shows: ranges, counts, sequences, the session in hex).
-- Returns false and why when the frame is malformed.
local function dissect_ctl_body(tvb, pinfo, t, off, len, ftype, s)
  local stop = off + len
  local function need(n) return len >= n end
  local function u64(o) return tvb(off + o, 8):le_uint64() end
  local function u32(o) return tvb(off + o, 4):le_uint() end
  local function session(o)
    t:add_le(F.ctl_session, tvb(off + o, 8))
    s[#s + 1] = "session " .. hex64(u64(o))
  end
  if ctl_size[ftype] and len ~= ctl_size[ftype] then
    return false, string.format("length %d, the frame's is %d", len, ctl_size[ftype])
  end
  if ftype == 1 then
    if not need(24) then return false, "shorter than 24 bytes" end
    t:add_le(F.ctl_channel, tvb(off + 12, 2))
    t:add_le(F.ctl_credential_length, tvb(off + 14, 2))
    t:add_le(F.ctl_sender_id, tvb(off + 16, 4))
    s[#s + 1] = string.format("ch %d, sender %d", tvb(off + 12, 2):le_uint(), u32(16))
    local ok, why = dissect_instrument_set(tvb, t, off + 20, stop, s)
    if tvb(off + 14, 2):le_uint() ~= 0 then return false, "non-zero credential length (credentials no longer travel)" end
    return ok, why
  elseif ftype == 2 then
    session(12)
    t:add_le(F.ctl_last_seq, tvb(off + 20, 8))
    t:add_le(F.ctl_oldest_seq, tvb(off + 28, 8))
    t:add_le(F.ctl_granted, tvb(off + 36, 4))
    local granted = u32(36)
    t:add_le(F.ctl_accepts_latency, tvb(off + 6, 2))
    s[#s + 1] = string.format("last %s, oldest %s, granted %s%s", tostring(u64(20)), tostring(u64(28)),
      granted == M.ALL and "all" or tostring(granted),
      bit32.band(tvb(off + 6, 2):le_uint(), 1) ~= 0 and ", accepts latency reports" or "")
  elseif ftype == 3 or ftype == 6 then
    return dissect_instrument_set(tvb, t, off + 12, stop, s)
  elseif ftype == 4 then
    session(12)
    t:add_le(F.ctl_from_seq, tvb(off + 20, 8))
    t:add_le(F.ctl_count, tvb(off + 28, 4))
    s[#s + 1] = "seq " .. range(u64(20), u32(28))
  elseif ftype == 5 then
    if not need(44) then return false, "shorter than 44 bytes" end
    session(12)
    t:add_le(F.ctl_retransmit_status, tvb(off + 20, 1))
    t:add_le(F.ctl_datagram_count, tvb(off + 24, 4))
    t:add_le(F.ctl_from_seq, tvb(off + 28, 8))
    t:add_le(F.ctl_oldest_available, tvb(off + 36, 8))
    local n, o, found = u32(24), off + 44, 0
    local status = tvb(off + 20, 1):uint()
    s[#s + 1] = string.format("%s, %d datagram%s%s, oldest %s", retransmit_statuses[status] or ("status " .. status),
      n, n == 1 and "" or "s", n > 0 and (" seq " .. range(u64(28), n)) or (" from " .. tostring(u64(28))),
      tostring(u64(36)))
    while o < stop do
      if stop - o < 2 then return false, "a datagram length cut short" end
      local dl = tvb(o, 2):le_uint()
      t:add_le(F.ctl_datagram_length, tvb(o, 2))
      if dl > stop - o - 2 then return false, string.format("datagram of %d bytes, %d left", dl, stop - o - 2) end
      if dl >= M.HEADER and tvb(o + 2, 2):le_uint() == M.DATAGRAM_MAGIC then
        M.dissect_datagram(tvb, pinfo, t, o + 2, dl)
      else
        t:add_proto_expert_info(E.short, "retransmitted datagram of " .. dl .. " bytes")
      end
      found = found + 1
      o = o + 2 + dl
    end
    t:add(F.ctl_datagrams_found, tvb(off + 24, 4), found):set_generated()
    if found ~= n then return false, string.format("datagram count %d, %d found", n, found) end
  elseif ftype == 7 then
    if not need(20) then return false, "shorter than 20 bytes" end
    session(12)
    local found, ok = M.dissect_messages(tvb, pinfo, t, off + 20, len - 20)
    s[#s + 1] = found .. " messages"
    if not ok then return false, "malformed snapshot messages" end
  elseif ftype == 8 then
    session(12)
    t:add_le(F.ctl_snapshot_status, tvb(off + 20, 1))
    t:add_le(F.ctl_instruments, tvb(off + 24, 4))
    t:add_le(F.ctl_snapshot_seq, tvb(off + 28, 8))
    local status = tvb(off + 20, 1):uint()
    s[#s + 1] = string.format("%s, %d instruments at seq %s", snapshot_statuses[status] or ("status " .. status),
      u32(24), tostring(u64(28)))
  elseif ftype == 9 then
    t:add_le(F.ctl_position, tvb(off + 12, 8))
    t:add_le(F.ctl_lag, tvb(off + 20, 8))
    t:add_le(F.ctl_drops, tvb(off + 28, 8))
    t:add_le(F.ctl_capacity, tvb(off + 36, 8))
    s[#s + 1] = string.format("position %s, lag %s, drops %s, capacity %s", tostring(u64(12)), tostring(u64(20)),
      tostring(u64(28)), tostring(u64(36)))
  elseif ftype == 17 then
    t:add_le(F.ctl_latency_count, tvb(off + 12, 8))
    t:add_le(F.ctl_latency_p50, tvb(off + 20, 8))
    t:add_le(F.ctl_latency_p99, tvb(off + 28, 8))
    t:add_le(F.ctl_latency_max, tvb(off + 36, 8))
    s[#s + 1] = string.format("%s samples, p50 %s ns, p99 %s ns, max %s ns", tostring(u64(12)), tostring(u64(20)),
      tostring(u64(28)), tostring(u64(36)))
  elseif ftype == 10 then
    if not need(16) then return false, "shorter than 16 bytes" end
    t:add_le(F.ctl_error_code, tvb(off + 12, 2))
    t:add_le(F.ctl_text_length, tvb(off + 14, 2))
    local code, tl = tvb(off + 12, 2):le_uint(), tvb(off + 14, 2):le_uint()
    local shown = math.min(tl, len - 16)
    local text = shown > 0 and tvb(off + 16, shown):string() or ""
    if shown > 0 then t:add(F.ctl_text, tvb(off + 16, shown), text) end
    s[#s + 1] = string.format("%d %s: %s", code, error_codes[code] or "unknown", text)
    if 16 + tl ~= len or tl > 1024 then return false, string.format("text length %d in a %d-byte frame", tl, len) end
  elseif ftype == 11 then
    if not need(48) then return false, "shorter than 48 bytes" end
    t:add_le(F.ctl_channel, tvb(off + 12, 2))
    t:add_le(F.ctl_scheme, tvb(off + 14, 1))
    t:add_le(F.ctl_identity_length, tvb(off + 15, 1))
    t:add(F.ctl_client_nonce, tvb(off + 16, 32))
    local n = tvb(off + 15, 1):uint()
    local shown = math.min(n, len - 48)
    local identity = shown > 0 and tvb(off + 48, shown):string() or ""
    if shown > 0 then t:add(F.ctl_identity, tvb(off + 48, shown), identity) end
    s[#s + 1] = string.format("ch %d, identity %s", tvb(off + 12, 2):le_uint(), identity)
    if n < 1 or n > 64 or 48 + n ~= len then return false, string.format("identity length %d in a %d-byte frame", n, len) end
  elseif ftype == 12 then
    t:add(F.ctl_server_nonce, tvb(off + 12, 32))
    t:add(F.ctl_server_proof, tvb(off + 44, 32))
  elseif ftype == 13 then
    t:add(F.ctl_client_proof, tvb(off + 12, 32))
  elseif ftype == 16 then
    session(12)
    t:add(F.ctl_wrapped_key, tvb(off + 20, 16))
    t:add(F.ctl_key_check, tvb(off + 36, 32))
  elseif ftype == 15 then
    session(12)
    t:add_le(F.ctl_last_seq, tvb(off + 20, 8))
    t:add_le(F.ctl_oldest_seq, tvb(off + 28, 8))
    local fi = t:add_le(F.ctl_session_flags, tvb(off + 36, 1))
    fi:add(F.ctl_ended, tvb(off + 36, 1))
    t:add_le(F.ctl_end_seq, tvb(off + 40, 8))
    local ended = bit32.band(tvb(off + 36, 1):uint(), 1) ~= 0
    s[#s + 1] = string.format("last %s, oldest %s%s", tostring(u64(20)), tostring(u64(28)),
      ended and (", ended at " .. tostring(u64(40))) or "")
    if bit32.band(tvb(off + 36, 1):uint(), 0xfe) ~= 0 then return false, "unknown session flag bits" end
  elseif ftype ~= 14 then
    return false, "unknown frame type " .. ftype
  end
  return true
end

local function ctl_pdu_len(tvb, pinfo, off)
  local len = tvb(off, 4):le_uint()
  -- An impossible length cannot be resynchronised (§3): take the rest of the
  -- segment so the frame is shown with its error instead of waiting forever.
  if len < M.CTL_HEADER or len > M.CTL_MAX_FRAME then return tvb:len() - off end
  return len
end

local function dissect_ctl_pdu(tvb, pinfo, tree)
  pinfo.cols.protocol = "mdcast"
  local len = tvb:len()
  local t = tree:add(M.mdcast_ctl, tvb(), "mdcast control frame")
  local li = t:add_le(F.ctl_length, tvb(0, 4))
  local declared = tvb(0, 4):le_uint()
  if declared < M.CTL_HEADER or declared > M.CTL_MAX_FRAME or declared ~= len then
    li:add_proto_expert_info(E.ctl_stream, string.format("length %d", declared))
    return len
  end
  local ftype = tvb(4, 1):uint()
  t:add_le(F.ctl_type, tvb(4, 1))
  local vi = t:add_le(F.ctl_version, tvb(5, 1))
  t:add_le(F.ctl_reserved, tvb(6, 2))
  t:add_le(F.ctl_request_id, tvb(8, 4))
  local name = ctl_types[ftype] or ("type " .. ftype)
  if tvb(5, 1):uint() ~= M.CTL_VERSION then vi:add_proto_expert_info(E.version) end
  local s = {}
  local ok, why = dissect_ctl_body(tvb, pinfo, t, 0, len, ftype, s)
  if not ok then t:add_proto_expert_info(E.ctl, name .. ": " .. (why or "malformed")) end
  local summary = #s > 0 and (" " .. table.concat(s, ", ")) or ""
  t:append_text(": " .. name .. ", request " .. tvb(8, 4):le_uint() .. (#s > 0 and "," or "") .. summary)
  -- Several frames in one segment: each gets its part of the Info column.
  local info = tostring(pinfo.cols.info)
  if info:sub(1, 6) ~= "mdcast" then info = "mdcast" end
  pinfo.cols.info = info .. (info == "mdcast" and " " or "; ") .. name .. summary
  return len
end

local function ctl_dissector(tvb, pinfo, tree)
  pinfo.cols.info = "mdcast"
  dissect_tcp_pdus(tvb, tree, 4, ctl_pdu_len, dissect_ctl_pdu)
  return tvb:len()
end

-- A TCP stream found by heuristics: the first bytes must be a plausible frame
-- header (length in range, version 2, a known type, reserved 0); the
-- conversation is then the control plane's for good.
local function heur_tcp(tvb, pinfo, tree)
  if not M.mdcast.prefs.heuristics or tvb:len() < M.CTL_HEADER then return false end
  local len, ftype = tvb(0, 4):le_uint(), tvb(4, 1):uint()
  if len < M.CTL_HEADER or len > M.CTL_MAX_FRAME or tvb(5, 1):uint() ~= M.CTL_VERSION or ctl_types[ftype] == nil
    or tvb(6, 2):le_uint() ~= 0 then
    return false
  end
  if ctl_size[ftype] and len ~= ctl_size[ftype] then return false end
  pinfo.conversation = M.mdcast_ctl
  M.mdcast_ctl.dissector(tvb, pinfo, tree)
  return true
end

return {
  -- Before mdcast.fields is set: the control frames' fields join mdcast's.
  fields = function(shared)
    M = shared
    fields()
  end,
  -- Once the datagram decoder exists: the dissector and its heuristic.
  register = function()
    F, E = M.F, M.E
    M.mdcast_ctl.dissector = ctl_dissector
    M.mdcast_ctl:register_heuristic("tcp", heur_tcp)
  end,
}

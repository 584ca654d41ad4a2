-- braid.lua: a Wireshark dissector for braid, multipath routing for
-- wireless meshes (wire protocol version 1).
--
-- It decodes every braid message on UDP port 6868 (a preference changes
-- the port): data packets (header, flags, mode, group, source route; the
-- user's packet inside is handed on to Wireshark's IPv4 or IPv6
-- dissector, a path report inside is decoded as braid, a repair packet's
-- payload is shown as the XOR parity or Reed-Solomon shard it is), small
-- and big probes with their reports, link-state advertisements (every LSA
-- of a bundle, its links, prefixes and clients, the CRC-32 checked),
-- path reports, challenges, and the control header with its MAC trailer
-- (checked when the preference "keys" gives the key). It also marks the
-- kernel data path's zero-byte tree mode (an IPv4 packet with the
-- reserved flag set, its identification naming the entry point). A
-- message braid's code would refuse is marked with expert info named as
-- braid's receive counters name the error (braid.truncated,
-- braid.length_mismatch, braid.bad_checksum, ...), never with a Lua error.
--
-- Install: copy this file to ~/.local/lib/wireshark/plugins/ (Wireshark
-- and tshark load it at start), or load it for one run:
--     tshark -X lua_script:dist/wireshark/braid.lua -r capture.pcap -V
-- Keys (to check MACs): Preferences > Protocols > braid, or
--     tshark -o 'braid.keys:1:00112233...' ...   (ID:HEX[,ID:HEX])
--
-- The reference is docs/protocol.md (byte diagrams of every message);
-- crates/wire is the code that writes and reads these bytes. The test
-- crates/cli/tests/dissector.rs checks this file against that code with
-- tshark, on codec-made, simulated and real lab captures.

local VERSION = 1
local DEFAULT_PORT = 6868

-- 32-bit operations: Lua 5.2's bit32 (Wireshark up to 4.4), else the
-- same on Lua 5.3+'s operators (compiled at run time: 5.2 cannot parse them).
local bit = rawget(_G, "bit32") or load([[
    local M = {}
    local function fold(op)
        return function(a, b, ...)
            local r = op(math.tointeger(a) & 0xffffffff, math.tointeger(b) & 0xffffffff)
            if ... ~= nil then return M[op](r, ...) end
            return r
        end
    end
    local function and_(a, b) return a & b end
    local function or_(a, b) return a | b end
    local function xor_(a, b) return a ~ b end
    M.band, M.bor, M.bxor = fold(and_), fold(or_), fold(xor_)
    M[and_], M[or_], M[xor_] = M.band, M.bor, M.bxor
    function M.bnot(a) return ~math.tointeger(a) & 0xffffffff end
    function M.lshift(a, n) return (math.tointeger(a) << n) & 0xffffffff end
    function M.rshift(a, n) return (math.tointeger(a) & 0xffffffff) >> n end
    function M.rrotate(a, n)
        a = math.tointeger(a) & 0xffffffff
        return ((a >> n) | (a << (32 - n))) & 0xffffffff
    end
    return M
]])()
local band, bor, bxor, bnot = bit.band, bit.bor, bit.bxor, bit.bnot
local lshift, rshift, rrotate = bit.lshift, bit.rshift, bit.rrotate

local braid = Proto("braid", "braid multipath routing")

---------------------------------------------------------------- values

local msg_types = {
    [0] = "data",
    [1] = "small probe",
    [2] = "big probe",
    [3] = "link-state advertisement",
    [4] = "path report",
    [5] = "challenge",
    [6] = "echo",
    [7] = "session check",
    [8] = "repair request",
}
local modes = {
    [0] = "single",
    [1] = "stripe",
    [2] = "mirror",
    [3] = "tree",
    [4] = "parity",
    [5] = "parity-rotating",
    [6] = "erasure",
    [7] = "sliding",
}
local MODE_TREE, MODE_ERASURE, MODE_SLIDING = 3, 6, 7
local PREFIX_V4, PREFIX_V6, CLIENT_V4, CLIENT_V6, GATEWAY = 0x04, 0x06, 0x14, 0x16, 0x20
local AREA, MEMBERS, ADJACENT, MEMBER_V4, MEMBER_V6 = 0x30, 0x31, 0x32, 0x34, 0x36
local prefix_kinds = {
    [PREFIX_V4] = "IPv4 prefix",
    [PREFIX_V6] = "IPv6 prefix",
    [CLIENT_V4] = "IPv4 client",
    [CLIENT_V6] = "IPv6 client",
    [GATEWAY] = "gateway",
    [AREA] = "area",
    [MEMBERS] = "area members",
    [ADJACENT] = "adjacent area",
    [MEMBER_V4] = "IPv4 prefix of an area member",
    [MEMBER_V6] = "IPv6 prefix of an area member",
}
local challenge_kinds = { [1] = "request", [2] = "reply" }
local echo_kinds = { [1] = "request", [2] = "reply" }
local check_kinds = { [1] = "request", [2] = "proof" }
local PAYLOAD_IPV4, PAYLOAD_IPV6, PAYLOAD_BRAID = 1, 2, 3
local PAYLOAD_XOR, PAYLOAD_SHARD, PAYLOAD_OTHER, PAYLOAD_SLIDING = 4, 5, 6, 7
local payload_kinds = {
    [PAYLOAD_IPV4] = "IPv4 packet",
    [PAYLOAD_IPV6] = "IPv6 packet",
    [PAYLOAD_BRAID] = "braid message (control class)",
    [PAYLOAD_XOR] = "XOR parity",
    [PAYLOAD_SHARD] = "Reed-Solomon repair shard",
    [PAYLOAD_SLIDING] = "sliding-window repair",
    [PAYLOAD_OTHER] = "not IP",
}
local MAC_UNCHECKED, MAC_GOOD, MAC_BAD, MAC_UNKNOWN_KEY, MAC_NONE, MAC_MALFORMED = 0, 1, 2, 3, 4, 5
local mac_status = {
    [MAC_UNCHECKED] = "not checked (no key in the preferences)",
    [MAC_GOOD] = "good",
    [MAC_BAD] = "bad",
    [MAC_UNKNOWN_KEY] = "not checked (key id not in the preferences)",
    [MAC_NONE] = "none (unauthenticated)",
    [MAC_MALFORMED] = "not checked (the message's length is wrong)",
}
local checksum_status = { [0] = "bad", [1] = "good" }
local CLASS_CONTROL = 255
local AGE_FLUSH = 65535
local METRIC_UNUSABLE = 0xffffffff
local NODE_NONE = 0xffff

---------------------------------------------------------------- fields

local f = {}
local function field(key, pf) f[key] = pf end

-- Byte 0 of a message braid cannot read (another version, unknown type).
field("version", ProtoField.uint8("braid.version", "Version", base.DEC, nil, 0xf0))
field("type", ProtoField.uint8("braid.type", "Type", base.DEC, msg_types, 0x0f))
field("undecoded", ProtoField.bytes("braid.undecoded", "Not decoded (malformed message)"))

-- Data header.
field("data", ProtoField.none("braid.data", "Data header"))
field("data_version", ProtoField.uint8("braid.data.version", "Version", base.DEC, nil, 0xf0))
field("data_type", ProtoField.uint8("braid.data.type", "Type", base.DEC, msg_types, 0x0f))
field("data_flags", ProtoField.uint8("braid.data.flags", "Flags", base.HEX, nil, 0xf0))
field("data_congestion", ProtoField.bool("braid.data.flags.congestion", "Congestion seen (C)", 8, nil, 0x80))
field("data_urgent", ProtoField.bool("braid.data.flags.urgent", "Urgent (U)", 8, nil, 0x40))
field("data_parity", ProtoField.bool("braid.data.flags.parity", "Parity/repair (P)", 8, nil, 0x20))
field("data_waypoint", ProtoField.bool("braid.data.flags.waypoint", "Waypoint (W): the route ends short of the egress", 8, nil, 0x10))
field("data_mode", ProtoField.uint8("braid.data.mode", "Mode", base.DEC, modes, 0x0f))
field("data_path", ProtoField.uint8("braid.data.path", "Path", base.DEC, nil, 0xf0))
field("data_rlen", ProtoField.uint16("braid.data.rlen", "Route length (transit nodes)", base.DEC, nil, 0x0fc0))
field("data_rptr", ProtoField.uint8("braid.data.rptr", "Route pointer", base.DEC, nil, 0x3f))
field("data_ingress", ProtoField.uint16("braid.data.ingress", "Ingress node", base.DEC))
field("data_egress", ProtoField.uint16("braid.data.egress", "Egress node", base.DEC))
field("data_seq", ProtoField.uint32("braid.data.seq", "Sequence number", base.DEC))
field("data_group", ProtoField.none("braid.data.group", "Group"))
field("data_group_data", ProtoField.uint8("braid.data.group.data", "Data packets (m)", base.DEC, nil, 0xf0))
field("data_group_repair", ProtoField.uint8("braid.data.group.repair", "Repair packets (n-m)", base.DEC, nil, 0x0f))
field("data_group_depth", ProtoField.uint8("braid.data.group.depth", "Interleaving depth (bits 7-5, plus one)", base.DEC))
field("data_group_index", ProtoField.uint8("braid.data.group.index", "Shard index", base.DEC, nil, 0x1f))
field("data_group_base", ProtoField.uint32("braid.data.group.base", "Group's first data packet", base.DEC))
field("data_hop_limit", ProtoField.uint8("braid.data.hop_limit", "Hop limit", base.DEC))
field("data_class", ProtoField.uint8("braid.data.class", "Class", base.DEC))
field("data_epoch", ProtoField.uint32("braid.data.epoch", "Session epoch", base.HEX))
field("data_send_order", ProtoField.uint32("braid.data.send_order", "Send order", base.DEC))
field("data_route", ProtoField.none("braid.data.route", "Source route"))
field("data_route_hop", ProtoField.uint16("braid.data.route.hop", "Transit node", base.DEC))
field("data_next_hop", ProtoField.uint16("braid.data.next_hop", "Next node", base.DEC))
field("data_payload", ProtoField.none("braid.data.payload", "Payload"))
field("data_payload_kind", ProtoField.uint8("braid.data.payload.kind", "Payload", base.DEC, payload_kinds))
field("data_payload_bytes", ProtoField.bytes("braid.data.payload.bytes", "Payload bytes (not IP)"))
field("data_repair_len_xor", ProtoField.uint16("braid.data.repair.len_xor", "XOR of the data packets' lengths", base.DEC))
field("data_repair_xor", ProtoField.bytes("braid.data.repair.xor", "XOR of the data packets"))
field("data_repair_shard", ProtoField.bytes("braid.data.repair.shard", "Reed-Solomon repair shard"))
field("data_repair_span", ProtoField.uint8("braid.data.repair.span", "Data packets the repair covers (ending at its sequence number)", base.DEC))
field("data_repair_combination", ProtoField.bytes("braid.data.repair.combination", "Linear combination of the covered packets, GF(2^8)"))

-- Control header and MAC trailer.
field("ctl", ProtoField.none("braid.ctl", "Control header"))
field("ctl_version", ProtoField.uint8("braid.ctl.version", "Version", base.DEC, nil, 0xf0))
field("ctl_type", ProtoField.uint8("braid.ctl.type", "Type", base.DEC, msg_types, 0x0f))
field("ctl_flags", ProtoField.uint8("braid.ctl.flags", "Flags (0x01: LSAs carry origin signatures)", base.HEX))
field("lsa_signature", ProtoField.bytes("braid.lsa.signature", "Origin signature (Ed25519)"))
field("ctl_body_len", ProtoField.uint16("braid.ctl.body_len", "Body length", base.DEC))
field("ctl_sender", ProtoField.uint16("braid.ctl.sender", "Sender node", base.DEC))
field("ctl_key_id", ProtoField.uint8("braid.ctl.key_id", "Key id", base.DEC))
field("ctl_mac_len", ProtoField.uint8("braid.ctl.mac_len", "MAC length", base.DEC))
field("ctl_boot_index", ProtoField.uint32("braid.ctl.boot_index", "Boot index", base.HEX))
field("ctl_counter", ProtoField.uint32("braid.ctl.counter", "Packet counter", base.DEC))
field("auth", ProtoField.none("braid.auth", "Authentication trailer"))
field("auth_mac", ProtoField.bytes("braid.auth.mac", "MAC (HMAC-SHA-256 over header and body)"))
field("auth_status", ProtoField.uint8("braid.auth.status", "MAC status", base.DEC, mac_status))

-- Probes (types 1 and 2).
field("probe", ProtoField.none("braid.probe", "Probe"))
field("probe_seq", ProtoField.uint32("braid.probe.seq", "Probe sequence number", base.DEC))
field("probe_interval", ProtoField.uint16("braid.probe.interval", "Mean interval", base.UNIT_STRING, { " ms" }))
field("probe_rate", ProtoField.uint16("braid.probe.rate", "Rate (100 kbit/s units)", base.DEC))
field("probe_report_count", ProtoField.uint16("braid.probe.report_count", "Report count", base.DEC))
field("probe_digest", ProtoField.uint16("braid.probe.digest", "Database digest", base.HEX))
field("probe_report", ProtoField.none("braid.probe.report", "Report"))
field("probe_report_neighbor", ProtoField.uint16("braid.probe.report.neighbor", "Neighbor", base.DEC))
field("probe_report_rate", ProtoField.uint16("braid.probe.report.rate", "Stream rate (100 kbit/s units)", base.DEC))
field("probe_report_ratio", ProtoField.uint8("braid.probe.report.ratio", "Delivery ratio (/255)", base.DEC))
field("probe_report_reserved", ProtoField.uint8("braid.probe.report.reserved", "Reserved", base.DEC))
field("probe_padding", ProtoField.bytes("braid.probe.padding", "Padding"))

-- Link-state advertisements (type 3).
field("lsa_count", ProtoField.uint16("braid.lsa_count", "LSAs in this message", base.DEC))
field("lsa", ProtoField.none("braid.lsa", "Link-state advertisement"))
field("lsa_origin", ProtoField.uint16("braid.lsa.origin", "Origin node", base.DEC))
field("lsa_age", ProtoField.uint16("braid.lsa.age", "Age", base.UNIT_STRING, { " s" }))
field("lsa_seq", ProtoField.uint32("braid.lsa.seq", "Sequence number", base.DEC))
field("lsa_checksum", ProtoField.uint32("braid.lsa.checksum", "Checksum (CRC-32)", base.HEX))
field("lsa_checksum_status", ProtoField.uint8("braid.lsa.checksum.status", "Checksum status", base.DEC, checksum_status))
field("lsa_link_count", ProtoField.uint16("braid.lsa.link_count", "Link count", base.DEC))
field("lsa_prefix_count", ProtoField.uint16("braid.lsa.prefix_count", "Prefix count", base.DEC))
field("lsa_link", ProtoField.none("braid.lsa.link", "Link"))
field("lsa_link_neighbor", ProtoField.uint16("braid.lsa.link.neighbor", "Neighbor", base.DEC))
field("lsa_link_id", ProtoField.uint8("braid.lsa.link.id", "Link id", base.DEC))
field("lsa_link_reserved", ProtoField.uint8("braid.lsa.link.reserved", "Reserved", base.DEC))
field("lsa_link_metric_out", ProtoField.uint32("braid.lsa.link.metric_out", "Metric, origin to neighbor", base.DEC))
field("lsa_link_metric_in", ProtoField.uint32("braid.lsa.link.metric_in", "Metric, neighbor to origin", base.DEC))
field("lsa_prefix", ProtoField.none("braid.lsa.prefix", "Prefix"))
field("lsa_prefix_kind", ProtoField.uint8("braid.lsa.prefix.kind", "Kind", base.HEX, prefix_kinds))
field("lsa_prefix_len", ProtoField.uint8("braid.lsa.prefix.length", "Prefix length", base.DEC))
field("lsa_prefix_v4", ProtoField.ipv4("braid.lsa.prefix.v4", "IPv4 prefix"))
field("lsa_prefix_v6", ProtoField.ipv6("braid.lsa.prefix.v6", "IPv6 prefix"))
field("lsa_client", ProtoField.none("braid.lsa.client", "Client"))
field("lsa_client_quality", ProtoField.uint8("braid.lsa.client.quality", "Quality (1-255)", base.DEC))
field("lsa_client_v4", ProtoField.ipv4("braid.lsa.client.v4", "IPv4 client"))
field("lsa_client_v6", ProtoField.ipv6("braid.lsa.client.v6", "IPv6 client"))
field("lsa_gateway", ProtoField.none("braid.lsa.gateway", "Gateway"))
field("lsa_gateway_preference", ProtoField.uint8("braid.lsa.gateway.preference", "Preference (higher preferred)", base.DEC))
field("lsa_gateway_capacity", ProtoField.uint32("braid.lsa.gateway.capacity", "Uplink capacity (kbit/s; 0: not said)", base.DEC))
field("lsa_area", ProtoField.none("braid.lsa.area", "Area"))
field("lsa_length_zero", ProtoField.uint8("braid.lsa.prefix.zero", "Length byte (0)", base.DEC))
field("lsa_area_id", ProtoField.uint16("braid.lsa.area.id", "Area", base.DEC))
field("lsa_area_transit", ProtoField.uint32("braid.lsa.area.transit", "Transit cost (leader; 0: not the leader)", base.DEC))
field("lsa_members", ProtoField.none("braid.lsa.members", "Area members"))
field("lsa_members_first", ProtoField.uint16("braid.lsa.members.first", "First member", base.DEC))
field("lsa_members_extra", ProtoField.uint8("braid.lsa.members.extra", "Members after the first", base.DEC))
field("lsa_adjacent", ProtoField.none("braid.lsa.adjacent", "Adjacent area"))
field("lsa_member", ProtoField.none("braid.lsa.member", "Prefix of an area member"))
field("lsa_member_node", ProtoField.uint16("braid.lsa.member.node", "Member", base.DEC))
field("lsa_member_v4", ProtoField.ipv4("braid.lsa.member.v4", "IPv4 prefix"))
field("lsa_member_v6", ProtoField.ipv6("braid.lsa.member.v6", "IPv6 prefix"))
field("lsa_adjacent_area", ProtoField.uint16("braid.lsa.adjacent.area", "Area", base.DEC))
field("lsa_adjacent_metric", ProtoField.uint32("braid.lsa.adjacent.metric", "Cheapest link across", base.DEC))

-- Path reports (type 4).
field("report", ProtoField.none("braid.path_report", "Path report"))
field("report_ingress", ProtoField.uint16("braid.path_report.ingress", "Session's ingress node", base.DEC))
field("report_class", ProtoField.uint8("braid.path_report.class", "Class", base.DEC))
field("report_count", ProtoField.uint8("braid.path_report.count", "Path count", base.DEC))
field("report_entry", ProtoField.none("braid.path_report.entry", "Path"))
field("report_path", ProtoField.uint8("braid.path_report.path", "Path", base.DEC))
field("report_known", ProtoField.bool("braid.path_report.known", "Send order known (K)", 24, nil, 0x800000))
field("report_latest", ProtoField.uint24("braid.path_report.latest", "Send order of the latest arrival (mod 2^23)", base.DEC, nil, 0x7fffff))
field("report_received", ProtoField.uint32("braid.path_report.received", "Packets received", base.DEC))
field("report_age", ProtoField.uint16("braid.path_report.age", "Age of the latest arrival", base.UNIT_STRING, { " ms" }))

-- Echoes (type 6): braid ctl ping, end to end inside data packets.
field("echo", ProtoField.none("braid.echo", "Echo"))
field("echo_kind", ProtoField.uint8("braid.echo.kind", "Kind", base.DEC, echo_kinds))
field("echo_reserved", ProtoField.uint8("braid.echo.reserved", "Reserved", base.DEC))
field("echo_target", ProtoField.uint16("braid.echo.target", "Target node", base.DEC))
field("echo_seq", ProtoField.uint32("braid.echo.seq", "Sequence number", base.DEC))
field("echo_stamp", ProtoField.uint64("braid.echo.stamp", "Requester's stamp", base.DEC))
-- Session checks (type 7): an egress asks the ingress to prove a new
-- epoch or a jump, end to end inside data packets.
field("check", ProtoField.none("braid.check", "Session check"))
field("check_kind", ProtoField.uint8("braid.check.kind", "Kind", base.DEC, check_kinds))
field("check_class", ProtoField.uint8("braid.check.class", "Class", base.DEC))
field("check_target", ProtoField.uint16("braid.check.target", "Target node", base.DEC))
field("check_epoch", ProtoField.uint32("braid.check.epoch", "Epoch", base.HEX))
field("check_next_seq", ProtoField.uint32("braid.check.next_seq", "Next sequence number", base.DEC))
field("check_nonce", ProtoField.bytes("braid.check.nonce", "Nonce"))
-- Repair requests (type 8): an egress asks a session's ingress for more
-- repair of the sliding-window code, end to end inside data packets.
field("rreq", ProtoField.none("braid.rreq", "Repair request"))
field("rreq_class", ProtoField.uint8("braid.rreq.class", "Class", base.DEC))
field("rreq_count", ProtoField.uint8("braid.rreq.count", "Repair packets wanted", base.DEC))
field("rreq_target", ProtoField.uint16("braid.rreq.target", "Target node", base.DEC))
field("rreq_end", ProtoField.uint32("braid.rreq.end", "Newest packet covered", base.DEC))
field("rreq_first", ProtoField.uint32("braid.rreq.first", "Oldest packet wanted", base.DEC))

-- Challenges (type 5).
field("challenge", ProtoField.none("braid.challenge", "Challenge"))
field("challenge_kind", ProtoField.uint8("braid.challenge.kind", "Kind", base.DEC, challenge_kinds))
field("challenge_reserved", ProtoField.uint8("braid.challenge.reserved", "Reserved", base.DEC))
field("challenge_target", ProtoField.uint16("braid.challenge.target", "Target node", base.DEC))
field("challenge_nonce", ProtoField.bytes("braid.challenge.nonce", "Nonce"))
field("challenge_nonce_boot", ProtoField.uint32("braid.challenge.nonce.boot_index", "Requester's boot index", base.HEX))
field("challenge_nonce_counter", ProtoField.uint32("braid.challenge.nonce.counter", "Requester's request counter", base.DEC))

do
    local list = {}
    for _, pf in pairs(f) do list[#list + 1] = pf end
    braid.fields = list
end

-- Expert infos: one per error kind of crates/wire/src/error.rs (the names
-- of braid's rx_errors counters), and the node-level refusals a capture
-- can show.
local function malformed(name, text)
    return ProtoExpert.new("braid." .. name, text, expert.group.MALFORMED, expert.severity.ERROR)
end
local e = {
    truncated = malformed("truncated", "Truncated braid message"),
    unsupported_version = malformed("unsupported_version", "Unsupported braid version"),
    unknown_type = malformed("unknown_type", "Unknown braid message type"),
    wrong_type = ProtoExpert.new("braid.wrong_type",
        "Message of the wrong type here (a receiver refuses it: wrong_type)",
        expert.group.PROTOCOL, expert.severity.WARN),
    invalid_field = malformed("invalid_field", "Invalid braid field"),
    length_mismatch = malformed("length_mismatch", "braid length mismatch"),
    bad_checksum = ProtoExpert.new("braid.bad_checksum", "Bad LSA checksum",
        expert.group.CHECKSUM, expert.severity.ERROR),
    bad_mac = ProtoExpert.new("braid.bad_mac", "Bad MAC",
        expert.group.SECURITY, expert.severity.ERROR),
    tree_with_route = ProtoExpert.new("braid.tree_with_route", "Tree-mode packet with a source route",
        expert.group.PROTOCOL, expert.severity.WARN),
    reserved = ProtoExpert.new("braid.reserved_set", "Reserved field not zero (ignored on receipt)",
        expert.group.PROTOCOL, expert.severity.NOTE),
    not_ip = ProtoExpert.new("braid.not_ip", "Payload is neither IP nor a braid message",
        expert.group.PROTOCOL, expert.severity.NOTE),
    flush = ProtoExpert.new("braid.flush", "LSA flush (age 65535): the origin left",
        expert.group.SEQUENCE, expert.severity.CHAT),
}
do
    local list = {}
    for _, ex in pairs(e) do list[#list + 1] = ex end
    braid.experts = list
end

---------------------------------------------------------------- preferences

braid.prefs.port = Pref.uint("UDP port", DEFAULT_PORT, "braid's underlay UDP port (the daemon's `port`)")
braid.prefs.keys = Pref.string("Keys", "",
    "Authentication keys to check MACs with: ID:HEXSECRET[,ID:HEXSECRET] (the daemon's [auth] keys)")
braid.prefs.kernel_tree = Pref.bool("Mark kernel tree mode", true,
    "Show an IPv4 packet with the reserved flag set as braid's kernel tree mode (entry point in the identification)")

---------------------------------------------------------------- CRC-32 and HMAC-SHA-256

local crc_table = {}
for i = 0, 255 do
    local c = i
    for _ = 1, 8 do
        if band(c, 1) == 1 then c = bxor(0xedb88320, rshift(c, 1)) else c = rshift(c, 1) end
    end
    crc_table[i] = c
end

local function crc32(s)
    local c = 0xffffffff
    for i = 1, #s do
        c = bxor(crc_table[band(bxor(c, s:byte(i)), 0xff)], rshift(c, 8))
    end
    return bxor(c, 0xffffffff)
end

local K256 = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
}
local H256 = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 }

-- Runs SHA-256's compression over s (a multiple of 64 bytes) from state h.
local function sha256_blocks(h, s)
    local w = {}
    for off = 1, #s, 64 do
        for i = 0, 15 do
            local a, b, c, d = s:byte(off + 4 * i, off + 4 * i + 3)
            w[i] = bor(lshift(a, 24), lshift(b, 16), lshift(c, 8), d)
        end
        for i = 16, 63 do
            local x, y = w[i - 15], w[i - 2]
            local s0 = bxor(rrotate(x, 7), rrotate(x, 18), rshift(x, 3))
            local s1 = bxor(rrotate(y, 17), rrotate(y, 19), rshift(y, 10))
            w[i] = band(w[i - 16] + s0 + w[i - 7] + s1, 0xffffffff)
        end
        local a, b, c, d, e5, f6, g, hh = h[1], h[2], h[3], h[4], h[5], h[6], h[7], h[8]
        for i = 0, 63 do
            local S1 = bxor(rrotate(e5, 6), rrotate(e5, 11), rrotate(e5, 25))
            local ch = bxor(band(e5, f6), band(bnot(e5), g))
            local t1 = hh + S1 + ch + K256[i + 1] + w[i]
            local S0 = bxor(rrotate(a, 2), rrotate(a, 13), rrotate(a, 22))
            local maj = bxor(band(a, b), band(a, c), band(b, c))
            hh, g, f6, e5 = g, f6, e5, band(d + t1, 0xffffffff)
            d, c, b, a = c, b, a, band(t1 + S0 + maj, 0xffffffff)
        end
        h[1], h[2], h[3], h[4] = band(h[1] + a, 0xffffffff), band(h[2] + b, 0xffffffff),
            band(h[3] + c, 0xffffffff), band(h[4] + d, 0xffffffff)
        h[5], h[6], h[7], h[8] = band(h[5] + e5, 0xffffffff), band(h[6] + f6, 0xffffffff),
            band(h[7] + g, 0xffffffff), band(h[8] + hh, 0xffffffff)
    end
end

-- SHA-256 of msg, from state `from` (a copy is made) after `done` bytes.
local function sha256(msg, from, done)
    local h = {}
    for i = 1, 8 do h[i] = (from or H256)[i] end
    local total = (done or 0) + #msg
    local pad = (55 - total) % 64
    local bits = total * 8
    local tail = string.char(0x80) .. string.rep("\0", pad)
        .. string.char(0, 0, 0, band(math.floor(bits / 2 ^ 32), 0xff),
            band(rshift(bits % 2 ^ 32, 24), 0xff), band(rshift(bits % 2 ^ 32, 16), 0xff),
            band(rshift(bits % 2 ^ 32, 8), 0xff), band(bits % 2 ^ 32, 0xff))
    sha256_blocks(h, msg .. tail)
    local out = {}
    for i = 1, 8 do
        out[i] = string.char(rshift(h[i], 24), band(rshift(h[i], 16), 0xff), band(rshift(h[i], 8), 0xff), band(h[i], 0xff))
    end
    return table.concat(out)
end

-- Keys from the preference: id -> HMAC states after the padded key block.
local keys, keys_text = {}, nil
local function load_keys()
    if keys_text == braid.prefs.keys then return end
    keys_text, keys = braid.prefs.keys, {}
    for id, hex in string.gmatch(keys_text or "", "(%d+)%s*:%s*(%x+)") do
        local secret = hex:gsub("%x%x", function(x) return string.char(tonumber(x, 16)) end)
        if #secret > 64 then secret = sha256(secret) end
        secret = secret .. string.rep("\0", 64 - #secret)
        local ipad, opad = {}, {}
        for i = 1, 64 do
            ipad[i] = string.char(bxor(secret:byte(i), 0x36))
            opad[i] = string.char(bxor(secret:byte(i), 0x5c))
        end
        local inner, outer = {}, {}
        for i = 1, 8 do inner[i], outer[i] = H256[i], H256[i] end
        sha256_blocks(inner, table.concat(ipad))
        sha256_blocks(outer, table.concat(opad))
        keys[tonumber(id)] = { inner = inner, outer = outer }
    end
end

local function hmac_sha256(key, msg)
    return sha256(sha256(msg, key.inner, 64), key.outer, 64)
end

---------------------------------------------------------------- helpers

local function node(id)
    if id == NODE_NONE then return "none" end
    return "n" .. id
end

-- Adds the rest of tvb from `off` as bytes not decoded (a malformed
-- message), with the expert info `ex` saying why.
local function give_up(tree, tvb, off, ex, text)
    local item
    if off < tvb:len() then
        item = tree:add(f.undecoded, tvb(off))
    else
        item = tree
    end
    item:add_proto_expert_info(ex, text)
end

local function truncated(tree, tvb, off, need, what)
    give_up(tree, tvb, off, e.truncated,
        string.format("Truncated %s: needs %d bytes, has %d", what, need, tvb:len()))
end

---------------------------------------------------------------- data packets

local ip_dissector, ipv6_dissector
local dissect_message -- forward

local function dissect_data(tvb, pinfo, tree, root)
    local len = tvb:len()
    local hdr = tree:add(f.data, tvb(0, math.min(len, 20)))
    hdr:add(f.data_version, tvb(0, 1))
    hdr:add(f.data_type, tvb(0, 1))
    if len < 20 then
        truncated(hdr, tvb, 1, 20, "data header")
        return "Data (truncated)"
    end
    local b1, b2, b3 = tvb(1, 1):uint(), tvb(2, 1):uint(), tvb(3, 1):uint()
    local flags = hdr:add(f.data_flags, tvb(1, 1))
    flags:add(f.data_congestion, tvb(1, 1))
    flags:add(f.data_urgent, tvb(1, 1))
    flags:add(f.data_parity, tvb(1, 1))
    local waypoint_item = flags:add(f.data_waypoint, tvb(1, 1))
    local waypoint = band(b1, 0x10) ~= 0
    local mode = band(b1, 0x0f)
    local mode_item = hdr:add(f.data_mode, tvb(1, 1))
    local path = rshift(b2, 4)
    hdr:add(f.data_path, tvb(2, 1))
    local rlen = bor(lshift(band(b2, 0x0f), 2), rshift(b3, 6))
    local rlen_item = hdr:add(f.data_rlen, tvb(2, 2))
    local rptr = band(b3, 0x3f)
    local rptr_item = hdr:add(f.data_rptr, tvb(3, 1))
    local ingress, egress = tvb(4, 2):uint(), tvb(6, 2):uint()
    local ingress_item = hdr:add(f.data_ingress, tvb(4, 2))
    local egress_item = hdr:add(f.data_egress, tvb(6, 2))
    if ingress == NODE_NONE then ingress_item:append_text(" (reserved)") end
    if egress == NODE_NONE then egress_item:append_text(" (reserved)") end
    local seq = tvb(8, 4):uint()
    hdr:add(f.data_seq, tvb(8, 4))
    local shape, shard = tvb(12, 1):uint(), tvb(13, 1):uint()
    local gdata, grepair = rshift(shape, 4), band(shape, 0x0f)
    local depth, index = rshift(shard, 5) + 1, band(shard, 0x1f)
    local group = hdr:add(f.data_group, tvb(12, 2))
    group:add(f.data_group_data, tvb(12, 1))
    group:add(f.data_group_repair, tvb(12, 1))
    group:add(f.data_group_depth, tvb(13, 1), depth)
    group:add(f.data_group_index, tvb(13, 1))
    local no_group = gdata == 0 and grepair == 0
    local parity = band(b1, 0x20) ~= 0
    local repair = not no_group and index >= gdata
    if no_group then
        group:append_text(": none")
    else
        group:append_text(string.format(": %d data + %d repair, depth %d, shard %d (%s)",
            gdata, grepair, depth, index, repair and "repair" or "data"))
        local base_seq = repair and seq or (seq - index * depth) % 2 ^ 32
        group:add(f.data_group_base, tvb(8, 4), base_seq):set_generated()
    end
    hdr:add(f.data_hop_limit, tvb(14, 1))
    local class = tvb(15, 1):uint()
    local class_item = hdr:add(f.data_class, tvb(15, 1))
    if class == CLASS_CONTROL then class_item:append_text(" (braid's own messages)") end
    hdr:add(f.data_epoch, tvb(16, 4))
    -- Send order (DataHeader::send_order): what path reports count by.
    local order
    if repair then
        local last = (seq + (gdata > 0 and gdata - 1 or 0) * depth) % 2 ^ 32
        order = (last * 32 + 1 + (index - gdata)) % 2 ^ 32
    else
        order = (seq * 32) % 2 ^ 32
    end
    hdr:add(f.data_send_order, tvb(8, 4), order):set_generated()

    -- The codec's checks (DataHeader::parse) and the node's (tree mode).
    local bad
    if modes[mode] == nil then
        mode_item:add_proto_expert_info(e.invalid_field, "Invalid redundancy mode " .. mode .. " (8-15 are refused)")
        bad = true
    end
    if rptr > rlen then
        rptr_item:add_proto_expert_info(e.invalid_field,
            string.format("Route pointer %d past the route's %d entries", rptr, rlen))
        bad = true
    end
    if waypoint and rlen == 0 then
        waypoint_item:add_proto_expert_info(e.invalid_field, "Waypoint flag without a route")
        bad = true
    end
    local group_ok
    if no_group then
        group_ok = index == 0 and depth == 1 and not parity
    else
        group_ok = index < gdata + grepair and parity == repair
    end
    if not group_ok then
        group:add_proto_expert_info(e.invalid_field, "Invalid group: shard index, depth or P flag disagree")
        bad = true
    end
    if mode == MODE_TREE and rlen > 0 then
        rlen_item:add_proto_expert_info(e.tree_with_route)
    end

    local info = string.format("Data %s→%s seq=%d %s path %d", node(ingress), node(egress), seq,
        modes[mode] or ("mode " .. mode), path)
    if not no_group then
        info = info .. string.format(" %s %d/%d+%d", repair and "repair" or "shard", index, gdata, grepair)
    end
    if class == CLASS_CONTROL then info = info .. " (control class)" end

    local route_end = 20 + 2 * rlen
    if rlen > 0 then
        local route = hdr:add(f.data_route, tvb(20, math.min(len, route_end) - 20))
        local hops = {}
        local done = 20
        for i = 0, rlen - 1 do
            local at = 20 + 2 * i
            if at + 2 > len then break end
            done = at + 2
            local hop = route:add(f.data_route_hop, tvb(at, 2))
            local id = tvb(at, 2):uint()
            hop:prepend_text("[" .. i .. "] ")
            if i == rptr then hop:append_text(" (next)") end
            hops[#hops + 1] = node(id)
        end
        route:append_text(": " .. node(ingress) .. " → " .. table.concat(hops, " → ") .. " → " .. node(egress))
        hdr:set_len(math.min(len, route_end))
        if route_end > len then
            truncated(route, tvb, done, route_end, "source route")
            return info .. " (truncated)"
        end
    end
    local next_hop = egress
    if rptr < rlen then next_hop = tvb(20 + 2 * rptr, 2):uint() end
    if mode ~= MODE_TREE then
        hdr:add(f.data_next_hop, tvb(3, 1), next_hop):set_generated()
    end
    if bad then
        give_up(tree, tvb, route_end, e.invalid_field, "Payload not decoded: the header is invalid")
        return info .. " (invalid)"
    end

    local plen = len - route_end
    if plen == 0 then return info end
    local ptvb = tvb(route_end):tvb()
    local payload = tree:add(f.data_payload, tvb(route_end))
    if parity then
        if mode == MODE_SLIDING then
            payload:add(f.data_payload_kind, tvb(route_end), PAYLOAD_SLIDING):set_generated()
            payload:add(f.data_repair_span, tvb(route_end, 1))
            if plen > 1 then payload:add(f.data_repair_combination, tvb(route_end + 1)) end
        elseif mode == MODE_ERASURE or plen < 2 then
            payload:add(f.data_payload_kind, tvb(route_end), PAYLOAD_SHARD):set_generated()
            payload:add(f.data_repair_shard, tvb(route_end))
        else
            payload:add(f.data_payload_kind, tvb(route_end), PAYLOAD_XOR):set_generated()
            payload:add(f.data_repair_len_xor, tvb(route_end, 2))
            if plen > 2 then payload:add(f.data_repair_xor, tvb(route_end + 2)) end
        end
        payload:append_text(string.format(": repair, %d bytes", plen))
        return info
    end
    local nibble = rshift(tvb(route_end, 1):uint(), 4)
    if nibble == 4 or nibble == 6 then
        local v4 = nibble == 4
        payload:add(f.data_payload_kind, tvb(route_end), v4 and PAYLOAD_IPV4 or PAYLOAD_IPV6):set_generated()
        payload:append_text(string.format(": %s, %d bytes", v4 and "IPv4 packet" or "IPv6 packet", plen))
        tree:append_text(", " .. info)
        pinfo.cols.info:set(info .. " | ")
        pinfo.cols.info:fence()
        local dissector = v4 and ip_dissector or ipv6_dissector
        -- The user's packet is the next layer: a malformed one is the IP
        -- dissector's to report, not braid's.
        pcall(function() dissector:call(ptvb, pinfo, root) end)
        return nil
    elseif nibble == VERSION then
        payload:add(f.data_payload_kind, tvb(route_end), PAYLOAD_BRAID):set_generated()
        payload:append_text(string.format(": braid message, %d bytes", plen))
        local inner = dissect_message(ptvb, pinfo, payload, root, true)
        return info .. " | " .. (inner or "")
    else
        payload:add(f.data_payload_kind, tvb(route_end), PAYLOAD_OTHER):set_generated()
        payload:add(f.data_payload_bytes, tvb(route_end)):add_proto_expert_info(e.not_ip)
        return info
    end
end

---------------------------------------------------------------- control bodies

local function dissect_probe(body, tree, kind)
    local len = body:len()
    local t = tree:add(f.probe, body())
    t:append_text(kind == 1 and " (small)" or " (big)")
    if len < 12 then
        truncated(t, body, 0, 12, "probe")
        return "Probe (truncated)"
    end
    local seq = body(0, 4):uint()
    t:add(f.probe_seq, body(0, 4))
    t:add(f.probe_interval, body(4, 2))
    local rate = body(6, 2):uint()
    local rate_item = t:add(f.probe_rate, body(6, 2))
    if rate == 0 then
        rate_item:append_text(" (small probes)")
    elseif rate == 0xffff then
        rate_item:append_text(" (the radio's choice)")
    else
        rate_item:append_text(string.format(" (%.1f Mbit/s)", rate / 10))
    end
    local count = body(8, 2):uint()
    t:add(f.probe_report_count, body(8, 2))
    t:add(f.probe_digest, body(10, 2))
    local need = 12 + 6 * count
    local done = 12
    for i = 0, count - 1 do
        local at = 12 + 6 * i
        if at + 6 > len then break end
        done = at + 6
        local r = t:add(f.probe_report, body(at, 6))
        local neighbor, srate, ratio = body(at, 2):uint(), body(at + 2, 2):uint(), body(at + 4, 1):uint()
        r:add(f.probe_report_neighbor, body(at, 2))
        r:add(f.probe_report_rate, body(at + 2, 2))
        r:add(f.probe_report_ratio, body(at + 4, 1)):append_text(string.format(" (%.0f%%)", ratio * 100 / 255))
        local res = r:add(f.probe_report_reserved, body(at + 5, 1))
        if body(at + 5, 1):uint() ~= 0 then res:add_proto_expert_info(e.reserved) end
        r:append_text(string.format(": %s %s %.0f%%", node(neighbor),
            srate == 0 and "small" or (srate == 0xffff and "big" or string.format("%.1f Mbit/s", srate / 10)),
            ratio * 100 / 255))
    end
    if need > len then
        truncated(t, body, done, need, "probe reports")
        return "Probe (truncated)"
    end
    if len > need then t:add(f.probe_padding, body(need)) end
    return string.format("%s probe seq=%d, %d report%s", kind == 1 and "Small" or "Big", seq, count,
        count == 1 and "" or "s")
end

-- One LSA at `off` of the body; returns the offset after it, or nil
-- when it cannot be read to its end (the rest is then marked).
local function dissect_lsa(body, off, tree, summary, signed)
    local len = body:len()
    local t = tree:add(f.lsa, body(off, math.min(16, len - off)))
    if off + 16 > len then
        truncated(t, body, off, off + 16, "LSA")
        return nil
    end
    local origin, age, seq = body(off, 2):uint(), body(off + 2, 2):uint(), body(off + 4, 4):uint()
    local declared = body(off + 8, 4):uint()
    local links, prefixes = body(off + 12, 2):uint(), body(off + 14, 2):uint()
    t:add(f.lsa_origin, body(off, 2))
    local age_item = t:add(f.lsa_age, body(off + 2, 2))
    if age == AGE_FLUSH then
        age_item:append_text(" (flush)")
        age_item:add_proto_expert_info(e.flush)
    end
    t:add(f.lsa_seq, body(off + 4, 4))
    local sum_item = t:add(f.lsa_checksum, body(off + 8, 4))
    t:add(f.lsa_link_count, body(off + 12, 2))
    t:add(f.lsa_prefix_count, body(off + 14, 2))
    t:append_text(string.format(": %s seq %d, %d link%s, %d prefix%s%s", node(origin), seq, links,
        links == 1 and "" or "s", prefixes, prefixes == 1 and "" or "es", age == AGE_FLUSH and " (flush)" or ""))
    summary[#summary + 1] = string.format("%s#%d", node(origin), seq)
    local at = off + 16
    for _ = 1, links do
        if at + 12 > len then
            t:set_len(len - off)
            truncated(t, body, at, at + 12, "LSA link")
            return nil
        end
        local l = t:add(f.lsa_link, body(at, 12))
        local neighbor = body(at, 2):uint()
        local out, inn = body(at + 4, 4):uint(), body(at + 8, 4):uint()
        l:add(f.lsa_link_neighbor, body(at, 2))
        l:add(f.lsa_link_id, body(at + 2, 1))
        local res = l:add(f.lsa_link_reserved, body(at + 3, 1))
        if body(at + 3, 1):uint() ~= 0 then res:add_proto_expert_info(e.reserved) end
        local mo = l:add(f.lsa_link_metric_out, body(at + 4, 4))
        local mi = l:add(f.lsa_link_metric_in, body(at + 8, 4))
        if out == METRIC_UNUSABLE then mo:append_text(" (unusable)") end
        if inn == METRIC_UNUSABLE then mi:append_text(" (unusable)") end
        l:append_text(string.format(": %s, id %d, metric %s/%s", node(neighbor), body(at + 2, 1):uint(),
            out == METRIC_UNUSABLE and "-" or out, inn == METRIC_UNUSABLE and "-" or inn))
        at = at + 12
    end
    for _ = 1, prefixes do
        if at + 2 > len then
            t:set_len(len - off)
            truncated(t, body, at, at + 2, "LSA prefix")
            return nil
        end
        local kind, plen = body(at, 1):uint(), body(at + 1, 1):uint()
        local size = (kind == PREFIX_V4 or kind == CLIENT_V4 or kind == GATEWAY) and 4
            or ((kind == PREFIX_V6 or kind == CLIENT_V6) and 16 or nil)
            or ((kind == AREA or kind == ADJACENT) and 6 or nil)
            or (kind == MEMBERS and 2 or nil)
            or (kind == MEMBER_V4 and 6 or nil)
            or (kind == MEMBER_V6 and 18 or nil)
        if size == nil then
            local p = t:add(f.lsa_prefix, body(at, 2))
            p:add(f.lsa_prefix_kind, body(at, 1)):add_proto_expert_info(e.invalid_field,
                string.format("Invalid prefix kind 0x%02x: the rest of the LSA cannot be delimited", kind))
            t:set_len(len - off)
            give_up(t, body, at + 1, e.invalid_field, "Not decoded after an invalid prefix kind")
            return nil
        end
        if at + 2 + size > len then
            t:set_len(len - off)
            truncated(t, body, at, at + 2 + size, "LSA prefix")
            return nil
        end
        local client = kind == CLIENT_V4 or kind == CLIENT_V6
        if kind == AREA or kind == ADJACENT then
            local a = kind == AREA
            local p = t:add(a and f.lsa_area or f.lsa_adjacent, body(at, 2 + size))
            p:add(f.lsa_prefix_kind, body(at, 1))
            local z = p:add(f.lsa_length_zero, body(at + 1, 1))
            if plen ~= 0 then
                z:add_proto_expert_info(e.invalid_field, string.format("Length byte %d, not 0", plen))
            end
            p:add(a and f.lsa_area_id or f.lsa_adjacent_area, body(at + 2, 2))
            p:add(a and f.lsa_area_transit or f.lsa_adjacent_metric, body(at + 4, 4))
            p:append_text(string.format(a and ": %d, transit %d" or ": %d, metric %d",
                body(at + 2, 2):uint(), body(at + 4, 4):uint()))
        elseif kind == MEMBER_V4 or kind == MEMBER_V6 then
            local v4 = kind == MEMBER_V4
            local p = t:add(f.lsa_member, body(at, 2 + size))
            p:add(f.lsa_prefix_kind, body(at, 1))
            local l = p:add(f.lsa_prefix_len, body(at + 1, 1))
            local max = v4 and 32 or 128
            if plen > max then
                l:add_proto_expert_info(e.invalid_field, string.format("Prefix length %d over %d", plen, max))
            end
            p:add(f.lsa_member_node, body(at + 2, 2))
            p:add(v4 and f.lsa_member_v4 or f.lsa_member_v6, body(at + 4, size - 2))
            local addr = tostring(v4 and body(at + 4, 4):ipv4() or body(at + 4, 16):ipv6())
            p:append_text(string.format(": %s/%d at %d", addr, plen, body(at + 2, 2):uint()))
        elseif kind == MEMBERS then
            local p = t:add(f.lsa_members, body(at, 2 + size))
            p:add(f.lsa_prefix_kind, body(at, 1))
            p:add(f.lsa_members_extra, body(at + 1, 1))
            p:add(f.lsa_members_first, body(at + 2, 2))
            local first = body(at + 2, 2):uint()
            p:append_text(string.format(": %d-%d", first, first + plen))
        else
        local addr = tostring(size == 4 and body(at + 2, 4):ipv4() or body(at + 2, 16):ipv6())
        local p = t:add(kind == GATEWAY and f.lsa_gateway or (client and f.lsa_client or f.lsa_prefix),
            body(at, 2 + size))
        p:add(f.lsa_prefix_kind, body(at, 1))
        if kind == GATEWAY then
            p:add(f.lsa_gateway_preference, body(at + 1, 1))
            p:add(f.lsa_gateway_capacity, body(at + 2, 4))
            p:append_text(string.format(": preference %d, %d kbit/s", plen, body(at + 2, 4):uint()))
        elseif client then
            local q = p:add(f.lsa_client_quality, body(at + 1, 1))
            if plen == 0 then q:add_proto_expert_info(e.invalid_field, "Client quality 0 is refused") end
            p:add(size == 4 and f.lsa_client_v4 or f.lsa_client_v6, body(at + 2, size))
            p:append_text(string.format(": %s (quality %d)", addr, plen))
        else
            local l = p:add(f.lsa_prefix_len, body(at + 1, 1))
            local max = size == 4 and 32 or 128
            if plen > max then
                l:add_proto_expert_info(e.invalid_field, string.format("Prefix length %d over %d", plen, max))
            end
            p:add(size == 4 and f.lsa_prefix_v4 or f.lsa_prefix_v6, body(at + 2, size))
            p:append_text(string.format(": %s/%d", addr, plen))
        end
        end
        at = at + 2 + size
    end
    t:set_len(at - off)
    -- CRC-32 over origin, sequence number, then counts, links, prefixes.
    local computed = crc32(body:raw(off, 2) .. body:raw(off + 4, 4) .. body:raw(off + 12, at - off - 12))
    local ok = computed == declared
    t:add(f.lsa_checksum_status, body(off + 8, 4), ok and 1 or 0):set_generated()
    if ok then
        sum_item:append_text(" [correct]")
    else
        sum_item:append_text(string.format(" [incorrect, should be 0x%08x]", computed))
        sum_item:add_proto_expert_info(e.bad_checksum,
            string.format("Bad LSA checksum: 0x%08x, computed 0x%08x", declared, computed))
    end
    if signed then
        -- The origin's Ed25519 signature (not checked here: the roster
        -- is the routers').
        if at + 64 > len then
            truncated(t, body, at, at + 64, "LSA signature")
            return nil
        end
        t:add(f.lsa_signature, body(at, 64))
        at = at + 64
        t:set_len(at - off)
    end
    return at
end

local function dissect_lsas(body, tree, sender, signed)
    local len = body:len()
    local summary = {}
    if len == 0 then
        tree:add_proto_expert_info(e.truncated, "LSA message without an LSA")
        return "LSA (empty)"
    end
    local off = 0
    while off < len do
        off = dissect_lsa(body, off, tree, summary, signed)
        if off == nil then break end
    end
    tree:add(f.lsa_count, body(), #summary):set_generated()
    return string.format("LSA from %s: %s", node(sender), table.concat(summary, ", "))
end

local function dissect_path_report(body, tree)
    local len = body:len()
    local t = tree:add(f.report, body())
    if len < 4 then
        truncated(t, body, 0, 4, "path report")
        return "Path report (truncated)"
    end
    local ingress, class, count = body(0, 2):uint(), body(2, 1):uint(), body(3, 1):uint()
    t:add(f.report_ingress, body(0, 2))
    t:add(f.report_class, body(2, 1))
    t:add(f.report_count, body(3, 1))
    for i = 0, count - 1 do
        local at = 4 + 10 * i
        if at + 10 > len then
            truncated(t, body, at, 4 + 10 * count, "path report")
            return "Path report (truncated)"
        end
        local c = t:add(f.report_entry, body(at, 10))
        local path = body(at, 1):uint()
        local latest = body(at + 1, 3):uint()
        local known = band(latest, 0x800000) ~= 0
        local p = c:add(f.report_path, body(at, 1))
        if path > 15 then p:add_proto_expert_info(e.invalid_field, "Path index over 15") end
        c:add(f.report_known, body(at + 1, 3))
        c:add(f.report_latest, body(at + 1, 3))
        c:add(f.report_received, body(at + 4, 4))
        c:add(f.report_age, body(at + 8, 2))
        c:append_text(string.format(" %d: %d received%s", path, body(at + 4, 4):uint(),
            known and string.format(", latest %d, %d ms ago", band(latest, 0x7fffff), body(at + 8, 2):uint()) or ""))
    end
    local want = 4 + 10 * count
    if len > want then
        give_up(t, body, want, e.length_mismatch,
            string.format("Path report of %d paths is %d bytes, not %d", count, want, len))
    end
    return string.format("Path report to %s class %d, %d path%s", node(ingress), class, count, count == 1 and "" or "s")
end

local function dissect_challenge(body, tree)
    local len = body:len()
    local t = tree:add(f.challenge, body())
    if len < 12 then
        truncated(t, body, 0, 12, "challenge")
        return "Challenge (truncated)"
    end
    local kind, target = body(0, 1):uint(), body(2, 2):uint()
    local k = t:add(f.challenge_kind, body(0, 1))
    if challenge_kinds[kind] == nil then k:add_proto_expert_info(e.invalid_field, "Challenge kind is 1 or 2") end
    local res = t:add(f.challenge_reserved, body(1, 1))
    if body(1, 1):uint() ~= 0 then res:add_proto_expert_info(e.reserved) end
    t:add(f.challenge_target, body(2, 2))
    local n = t:add(f.challenge_nonce, body(4, 8))
    n:add(f.challenge_nonce_boot, body(4, 4))
    n:add(f.challenge_nonce_counter, body(8, 4))
    if len > 12 then
        give_up(t, body, 12, e.length_mismatch, string.format("A challenge is 12 bytes, not %d", len))
    end
    return string.format("Challenge %s to %s", challenge_kinds[kind] or ("kind " .. kind), node(target))
end

local function dissect_echo(body, tree)
    local len = body:len()
    local t = tree:add(f.echo, body())
    if len < 16 then
        truncated(t, body, 0, 16, "echo")
        return "Echo (truncated)"
    end
    local kind, target, seq = body(0, 1):uint(), body(2, 2):uint(), body(4, 4):uint()
    local k = t:add(f.echo_kind, body(0, 1))
    if echo_kinds[kind] == nil then k:add_proto_expert_info(e.invalid_field, "Echo kind is 1 or 2") end
    local res = t:add(f.echo_reserved, body(1, 1))
    if body(1, 1):uint() ~= 0 then res:add_proto_expert_info(e.reserved) end
    t:add(f.echo_target, body(2, 2))
    t:add(f.echo_seq, body(4, 4))
    t:add(f.echo_stamp, body(8, 8))
    if len > 16 then
        give_up(t, body, 16, e.length_mismatch, string.format("An echo is 16 bytes, not %d", len))
    end
    return string.format("Echo %s to %s, seq %d", echo_kinds[kind] or ("kind " .. kind), node(target), seq)
end

-- A fixed-size body shorter than `need`: cut off with the datagram (the
-- header declares more than came: truncated) or declared short (a
-- length mismatch, as the codec says).
local function short_body(t, body, need, declared, name, what)
    local len = body:len()
    if declared > len then
        truncated(t, body, 0, need, what)
        return name .. " (truncated)"
    end
    give_up(t, body, 0, e.length_mismatch, string.format("A %s is %d bytes, not %d", what, need, len))
    return name .. " (short)"
end

local function dissect_check(body, tree, declared)
    local len = body:len()
    local t = tree:add(f.check, body())
    if len < 20 then return short_body(t, body, 20, declared, "Session check", "session check") end
    local kind, class, target = body(0, 1):uint(), body(1, 1):uint(), body(2, 2):uint()
    local k = t:add(f.check_kind, body(0, 1))
    if check_kinds[kind] == nil then k:add_proto_expert_info(e.invalid_field, "Session check kind is 1 or 2") end
    t:add(f.check_class, body(1, 1))
    t:add(f.check_target, body(2, 2))
    t:add(f.check_epoch, body(4, 4))
    t:add(f.check_next_seq, body(8, 4))
    t:add(f.check_nonce, body(12, 8))
    if len > 20 then
        give_up(t, body, 20, e.length_mismatch, string.format("A session check is 20 bytes, not %d", len))
    end
    return string.format("Session check %s to %s, class %d", check_kinds[kind] or ("kind " .. kind), node(target), class)
end

local function dissect_repair_request(body, tree, declared)
    local len = body:len()
    local t = tree:add(f.rreq, body())
    if len < 12 then return short_body(t, body, 12, declared, "Repair request", "repair request") end
    local class, count, target = body(0, 1):uint(), body(1, 1):uint(), body(2, 2):uint()
    local last, first = body(4, 4):uint(), body(8, 4):uint()
    t:add(f.rreq_class, body(0, 1))
    local c = t:add(f.rreq_count, body(1, 1))
    if count < 1 or count > 15 then c:add_proto_expert_info(e.invalid_field, "A repair request asks for 1-15 packets") end
    t:add(f.rreq_target, body(2, 2))
    t:add(f.rreq_end, body(4, 4))
    local fi = t:add(f.rreq_first, body(8, 4))
    local span = (last - first) % 4294967296 + 1
    if span < 1 or span > 64 then fi:add_proto_expert_info(e.invalid_field, "A repair request names 1-64 packets") end
    if len > 12 then
        give_up(t, body, 12, e.length_mismatch, string.format("A repair request is 12 bytes, not %d", len))
    end
    return string.format("Repair request to %s, class %d: %d over %d-%d", node(target), class, count, first, last)
end

---------------------------------------------------------------- control messages

local function dissect_control(tvb, pinfo, tree, mtype)
    local len = tvb:len()
    local hdr = tree:add(f.ctl, tvb(0, math.min(len, 16)))
    hdr:add(f.ctl_version, tvb(0, 1))
    hdr:add(f.ctl_type, tvb(0, 1))
    if len < 16 then
        truncated(hdr, tvb, 1, 16, "control header")
        return msg_types[mtype] .. " (truncated)"
    end
    local flags = hdr:add(f.ctl_flags, tvb(1, 1))
    local flag_bits = tvb(1, 1):uint()
    local known_flags = mtype == 3 and 0x01 or 0x00
    if band(flag_bits, 0xff - known_flags) ~= 0 then flags:add_proto_expert_info(e.reserved) end
    local body_len = tvb(2, 2):uint()
    local len_item = hdr:add(f.ctl_body_len, tvb(2, 2))
    local sender = tvb(4, 2):uint()
    hdr:add(f.ctl_sender, tvb(4, 2))
    local key_id, mac_len = tvb(6, 1):uint(), tvb(7, 1):uint()
    hdr:add(f.ctl_key_id, tvb(6, 1))
    hdr:add(f.ctl_mac_len, tvb(7, 1))
    hdr:add(f.ctl_boot_index, tvb(8, 4))
    hdr:add(f.ctl_counter, tvb(12, 4))
    hdr:append_text(string.format(": %s from %s", msg_types[mtype], node(sender)))

    local declared = 16 + body_len + mac_len
    local body_avail = math.min(body_len, len - 16)
    local info
    if body_avail > 0 or body_len == 0 then
        local body = body_avail > 0 and tvb(16, body_avail):tvb() or nil
        if mtype == 1 or mtype == 2 then
            info = body and dissect_probe(body, tree, mtype) or "Probe (empty)"
        elseif mtype == 3 then
            if body then
                info = dissect_lsas(body, tree, sender, band(flag_bits, 0x01) ~= 0)
            else
                len_item:add_proto_expert_info(e.truncated, "LSA message without an LSA")
                info = "LSA (empty)"
            end
        elseif mtype == 4 then
            info = body and dissect_path_report(body, tree) or "Path report (empty)"
        elseif mtype == 6 then
            info = body and dissect_echo(body, tree) or "Echo (empty)"
        elseif mtype == 7 then
            info = body and dissect_check(body, tree, body_len) or "Session check (empty)"
        elseif mtype == 8 then
            info = body and dissect_repair_request(body, tree, body_len) or "Repair request (empty)"
        else
            info = body and dissect_challenge(body, tree) or "Challenge (empty)"
        end
        if not body and mtype ~= 3 then
            len_item:add_proto_expert_info(e.truncated, "Empty body")
        end
    end
    if len ~= declared then
        len_item:add_proto_expert_info(e.length_mismatch,
            string.format("Header declares %d bytes (16 + body %d + MAC %d), datagram has %d",
                declared, body_len, mac_len, len))
    end
    -- The MAC trailer: what follows the body, as the header says.
    local mac_at = 16 + body_len
    if mac_len > 0 and mac_at < len then
        local mac_bytes = math.min(mac_len, len - mac_at)
        local auth = tree:add(f.auth, tvb(mac_at, mac_bytes))
        auth:add(f.auth_mac, tvb(mac_at, mac_bytes))
        load_keys()
        local key = keys[key_id]
        local status
        if len ~= declared then
            status = MAC_MALFORMED
        elseif next(keys) == nil then
            status = MAC_UNCHECKED
        elseif key == nil then
            status = MAC_UNKNOWN_KEY
        elseif hmac_sha256(key, tvb:raw(0, mac_at)):sub(1, mac_len) == tvb:raw(mac_at, mac_len) then
            status = MAC_GOOD
        else
            status = MAC_BAD
        end
        local s = auth:add(f.auth_status, tvb(mac_at, mac_bytes), status)
        s:set_generated()
        if status == MAC_BAD then s:add_proto_expert_info(e.bad_mac, "Bad MAC under key " .. key_id) end
        auth:append_text(string.format(": key %d, %d bytes, %s", key_id, mac_len, mac_status[status]))
        if len > mac_at + mac_len then
            give_up(tree, tvb, mac_at + mac_len, e.length_mismatch, "Bytes after the MAC")
        end
    elseif mac_len == 0 then
        local auth = tree:add(f.auth, tvb(0, 0))
        auth:add(f.auth_status, tvb(0, 0), MAC_NONE):set_generated()
        auth:append_text(": none")
        auth:set_generated()
        if len > mac_at then
            give_up(tree, tvb, mac_at, e.length_mismatch, "Bytes after the body")
        end
    end
    return info
end

-- Dissects one whole braid message in tvb into `tree`; returns the
-- summary for the Info column (nil when an inner dissector wrote it).
-- `nested`: inside a data packet, where only a path report belongs.
dissect_message = function(tvb, pinfo, tree, root, nested)
    local len = tvb:len()
    if len < 1 then
        tree:add_proto_expert_info(e.truncated, "Empty braid datagram")
        return "Empty"
    end
    local b0 = tvb(0, 1):uint()
    local version, mtype = rshift(b0, 4), band(b0, 0x0f)
    if version ~= VERSION then
        tree:add(f.version, tvb(0, 1))
        tree:add(f.type, tvb(0, 1))
        give_up(tree, tvb, 1, e.unsupported_version, "braid version " .. version .. " (this dissector reads 1)")
        return "Unsupported version " .. version
    end
    if msg_types[mtype] == nil then
        tree:add(f.version, tvb(0, 1))
        tree:add(f.type, tvb(0, 1))
        give_up(tree, tvb, 1, e.unknown_type, "Unknown message type " .. mtype)
        return "Unknown type " .. mtype
    end
    -- Path reports, echoes and session checks travel end to end inside
    -- data packets; the link-local control plane refuses one on its own,
    -- the egress anything else.
    local end_to_end = mtype == 4 or mtype == 6 or mtype == 7 or mtype == 8
    if nested and not end_to_end then
        tree:add_proto_expert_info(e.wrong_type, "Inside a data packet of the control class: not a path report, echo or session check")
    elseif not nested and end_to_end then
        tree:add_proto_expert_info(e.wrong_type, msg_types[mtype] .. " outside a data packet")
    end
    if mtype == 0 then
        return dissect_data(tvb, pinfo, tree, root)
    end
    return dissect_control(tvb, pinfo, tree, mtype)
end

function braid.dissector(tvb, pinfo, root)
    if tvb:len() == 0 then return 0 end
    pinfo.cols.protocol = "braid"
    local tree = root:add(braid, tvb())
    local info = dissect_message(tvb, pinfo, tree, root)
    if info then
        pinfo.cols.info:set(info)
        tree:append_text(", " .. info)
    end
    return tvb:len()
end

---------------------------------------------------------------- kernel tree mode

-- The kernel data path's tree mode carries no braid header: an IPv4
-- packet whose reserved flag is set, its identification the entry
-- point (docs/protocol.md, "Tree mode in the kernel").
local mark = Proto("braid_mark", "braid kernel tree mode")
local mark_entry = ProtoField.uint16("braid_mark.entry", "Entry point node", base.DEC)
mark.fields = { mark_entry }
local ip_rb = Field.new("ip.flags.rb")
local ip_mf = Field.new("ip.flags.mf")
local ip_frag = Field.new("ip.frag_offset")
local ip_id = Field.new("ip.id")

function mark.dissector(tvb, pinfo, root)
    if not braid.prefs.kernel_tree then return end
    local rb = { ip_rb() }
    if #rb == 0 then return end
    local ids, mfs, frags = { ip_id() }, { ip_mf() }, { ip_frag() }
    -- The outermost IPv4 header only: the user's packet as it crosses the mesh.
    if not rb[1].value or (mfs[1] and mfs[1].value) or (frags[1] and frags[1].value ~= 0) then return end
    local id = ids[1]
    if not id then return end
    local t = root:add(mark, id.range)
    t:add(mark_entry, id.range)
    t:append_text(": entry point " .. node(id.value))
end
register_postdissector(mark)

---------------------------------------------------------------- registration

local registered_port
local function register_port()
    local udp = DissectorTable.get("udp.port")
    if registered_port then udp:remove(registered_port, braid) end
    registered_port = braid.prefs.port
    udp:add(registered_port, braid)
end

function braid.prefs_changed()
    if registered_port ~= braid.prefs.port then register_port() end
    load_keys()
end

function braid.init()
    ip_dissector = Dissector.get("ip")
    ipv6_dissector = Dissector.get("ipv6")
    load_keys()
end

ip_dissector = Dissector.get("ip")
ipv6_dissector = Dissector.get("ipv6")
register_port()

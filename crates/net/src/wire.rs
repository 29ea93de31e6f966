//! Header sizes on the wire, in bytes (IPv4, no IP options).

/// IPv4 header without options (RFC 791).
pub const IPV4_HEADER: u32 = 20;
/// UDP header (RFC 768).
pub const UDP_HEADER: u32 = 8;
/// TCP header without options (RFC 9293).
pub const TCP_HEADER: u32 = 20;
/// The TCP timestamps option (RFC 7323) as Linux sends it: NOP, NOP, kind 8,
/// length 10, TSval (4), TSecr (4) = 12 bytes.
pub const TCP_TIMESTAMPS_OPTION: u32 = 12;

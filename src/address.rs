//! Which addresses the device's outbound calls (job calls, webhooks, alerts) may reach. A job's
//! URL comes from whoever holds an API key, so without a guard it could make the device call its
//! own loopback services, the LAN behind it or a cloud metadata endpoint (server-side request
//! forgery). Refused by default: loopback, private (RFC 1918, unique-local), link-local and the
//! cloud metadata address, shared CGNAT space, "this network", documentation, benchmarking,
//! multicast, broadcast and reserved ranges, and every IPv6 form that carries an IPv4 address
//! (IPv4-mapped, IPv4-compatible, NAT64, 6to4, Teredo), since what they reach depends on the
//! network. [`AddressPolicy`] opens ranges (`allow_private`, for tests and kiosks on a LAN).
//!
//! The library checks the hosts it can see without a network: a URL whose host is an IP literal,
//! in any of the forms URL parsers accept (`2130706433`, `0x7f.1`, `0177.0.0.1`, `[::ffff:7f00:1]`),
//! or `localhost`, is refused when the job is created. Names are resolved by the host's
//! transport, which must check every resolved address and connect only to a checked one (the
//! CLI's transport does: `docs/jobs.md`).
//!
//! [`check_url`] and [`check_headers`] are the checks every outbound target takes at create time
//! (jobs, schedules, webhooks, alert channels) and at open (the SIM-swap provider): they sit here,
//! below both the options and the service, so that neither has to import the other.

use std::collections::BTreeMap;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use crate::error::{Error, Result};

/// Longest URL accepted (target and webhook), bytes.
pub const MAX_URL_LEN: usize = 2048;
/// Most headers a job's call or webhook may carry.
pub const MAX_HEADERS: usize = 50;
/// Longest header value, bytes.
pub const MAX_HEADER_VALUE_LEN: usize = 4096;

/// An address range: an address and a prefix length (`10.0.0.0/8`, `fd00::/8`; a bare address is
/// the one address).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    address: IpAddr,
    prefix: u8,
}

impl Cidr {
    /// Whether `ip` lies in the range (IPv4 ranges hold IPv4 addresses, IPv6 ranges IPv6 ones).
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.address, ip) {
            (IpAddr::V4(range), IpAddr::V4(ip)) => {
                prefix_equal(&range.octets(), &ip.octets(), self.prefix)
            }
            (IpAddr::V6(range), IpAddr::V6(ip)) => {
                prefix_equal(&range.octets(), &ip.octets(), self.prefix)
            }
            _ => false,
        }
    }
}

fn prefix_equal(a: &[u8], b: &[u8], prefix: u8) -> bool {
    let whole = usize::from(prefix / 8);
    let rest = prefix % 8;
    if a[..whole] != b[..whole] {
        return false;
    }
    rest == 0 || (a[whole] ^ b[whole]) >> (8 - rest) == 0
}

impl FromStr for Cidr {
    type Err = String;

    fn from_str(text: &str) -> Result<Cidr, String> {
        let bad = || format!("\"{text}\" is not an address range such as 10.0.0.0/8 or fd00::/8");
        let (address, prefix) = match text.split_once('/') {
            Some((address, prefix)) => (address, Some(prefix)),
            None => (text, None),
        };
        let address: IpAddr = address.parse().map_err(|_| bad())?;
        let bits = if address.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            Some(prefix) => prefix
                .parse::<u8>()
                .ok()
                .filter(|&prefix| prefix <= bits)
                .ok_or_else(bad)?,
            None => bits,
        };
        Ok(Cidr { address, prefix })
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}/{}", self.address, self.prefix)
    }
}

/// Why an address is refused by default, or `None` for a public unicast address.
pub fn blocked_reason(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(ip) => blocked_v4(ip),
        IpAddr::V6(ip) => blocked_v6(ip),
    }
}

fn blocked_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, d] = ip.octets();
    Some(match (a, b, c, d) {
        (0, ..) => "a \"this network\" address",
        (10, ..) | (172, 16..=31, ..) | (192, 168, ..) => "a private address",
        (127, ..) => "a loopback address",
        (169, 254, 169, 254) => "the cloud metadata address",
        (169, 254, ..) => "a link-local address",
        (100, 64..=127, ..) => "a shared (carrier-grade NAT) address",
        (192, 0, 0, _) => "an IETF protocol address",
        (192, 0, 2, _) | (198, 51, 100, _) | (203, 0, 113, _) => "a documentation address",
        (192, 88, 99, _) => "a 6to4 relay address",
        (198, 18..=19, ..) => "a benchmarking address",
        (224..=239, ..) => "a multicast address",
        (255, 255, 255, 255) => "the broadcast address",
        (240..=255, ..) => "a reserved address",
        _ => return None,
    })
}

fn blocked_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    Some(match s {
        [0, 0, 0, 0, 0, 0, 0, 0] => "the unspecified address",
        [0, 0, 0, 0, 0, 0, 0, 1] => "a loopback address",
        [0, 0, 0, 0, 0, 0xffff, ..] => "an IPv4-mapped address",
        [0, 0, 0, 0, 0, 0, ..] => "an IPv4-compatible address",
        [0x64, 0xff9b, 0, 0, 0, 0, ..] | [0x64, 0xff9b, 1, ..] => "a NAT64 address",
        [0x2002, ..] => "a 6to4 address",
        [0x2001, 0, ..] => "a Teredo address",
        [0x2001, 0xdb8, ..] => "a documentation address",
        [0x100, 0, 0, 0, ..] => "a discard-only address",
        [first, ..] if first & 0xfe00 == 0xfc00 => "a private (unique local) address",
        [first, ..] if first & 0xffc0 == 0xfe80 => "a link-local address",
        [first, ..] if first & 0xffc0 == 0xfec0 => "a site-local address",
        [first, ..] if first & 0xff00 == 0xff00 => "a multicast address",
        _ => return None,
    })
}

/// Which addresses outbound calls may reach: public unicast addresses, plus the ranges opened.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddressPolicy {
    allowed: Vec<Cidr>,
}

impl AddressPolicy {
    /// The default policy with `allowed` opened.
    pub fn new(allowed: Vec<Cidr>) -> AddressPolicy {
        AddressPolicy { allowed }
    }

    /// Parses ranges such as `127.0.0.0/8`; the error names the one that is not a range.
    pub fn parse<S: AsRef<str>>(ranges: &[S]) -> Result<AddressPolicy, String> {
        let allowed = ranges
            .iter()
            .map(|range| range.as_ref().parse())
            .collect::<Result<Vec<Cidr>, String>>()?;
        Ok(AddressPolicy { allowed })
    }

    /// The ranges opened.
    pub fn allowed(&self) -> &[Cidr] {
        &self.allowed
    }

    /// Why a call to `ip` is refused, or `None` when it may be made.
    pub fn refusal(&self, ip: IpAddr) -> Option<String> {
        let reason = blocked_reason(ip)?;
        if self.allowed.iter().any(|range| range.contains(ip)) {
            return None;
        }
        Some(format!(
            "{ip} is {reason}; calls to it are refused unless allow_private opens it"
        ))
    }

    /// Why a call to `url`'s host is refused, when the host alone tells (an IP literal in any
    /// form URL parsers read, or `localhost`); `None` for a name, which the transport checks
    /// after resolving it, and for an allowed address.
    pub fn url_refusal(&self, url: &str) -> Option<String> {
        match url_host(url)? {
            Host::Ip(ip) => self.refusal(ip),
            Host::Localhost(name) => {
                let loopback = IpAddr::V4(Ipv4Addr::LOCALHOST);
                self.refusal(loopback)
                    .map(|_| format!("{name} is a loopback name; calls to it are refused unless allow_private opens 127.0.0.0/8"))
            }
            Host::Name => None,
        }
    }
}

enum Host {
    Ip(IpAddr),
    Localhost(String),
    Name,
}

/// The host of an `http`/`https` URL as a URL parser reads it: userinfo and port dropped,
/// percent escapes decoded, a trailing dot ignored, IPv4 in the WHATWG forms (1-4 parts, each
/// decimal, `0x` hex or `0` octal). `None` when the URL has no host.
fn url_host(url: &str) -> Option<Host> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#', '\\']).next()?;
    let host_port = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    if let Some(bracketed) = host_port.strip_prefix('[') {
        let inner = bracketed.split(']').next()?;
        let inner = inner.split('%').next()?;
        return inner
            .parse::<Ipv6Addr>()
            .ok()
            .map(|ip| Host::Ip(IpAddr::V6(ip)));
    }
    let host = host_port.split(':').next()?;
    let decoded: Vec<u8> = percent_encoding::percent_decode_str(host).collect();
    let host = String::from_utf8_lossy(&decoded).to_ascii_lowercase();
    let host = host.strip_suffix('.').unwrap_or(&host);
    if host == "localhost" || host.ends_with(".localhost") {
        return Some(Host::Localhost(host.to_owned()));
    }
    Some(parse_ipv4(host).map_or(Host::Name, |ip| Host::Ip(IpAddr::V4(ip))))
}

/// IPv4 as the WHATWG URL standard reads a host whose last part is a number.
fn parse_ipv4(host: &str) -> Option<Ipv4Addr> {
    let parts: Vec<&str> = host.split('.').collect();
    if parts.is_empty() || parts.len() > 4 {
        return None;
    }
    let numbers = parts
        .iter()
        .map(|part| parse_ipv4_number(part))
        .collect::<Option<Vec<u64>>>()?;
    let (last, init) = numbers.split_last()?;
    if init.iter().any(|&n| n > 255) || *last >= 1u64 << (8 * (5 - numbers.len())) {
        return None;
    }
    let mut value = *last;
    for (index, &n) in init.iter().enumerate() {
        value += n << (8 * (3 - index));
    }
    u32::try_from(value).ok().map(Ipv4Addr::from)
}

fn parse_ipv4_number(part: &str) -> Option<u64> {
    let (digits, radix) = if let Some(hex) = part.strip_prefix("0x") {
        (hex, 16)
    } else if part.len() > 1 && part.starts_with('0') {
        (&part[1..], 8)
    } else {
        (part, 10)
    };
    if digits.is_empty() {
        return (radix == 16).then_some(0);
    }
    if digits.len() > 12 {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// Checks a target or webhook URL: `http` or `https`, a host, no spaces or control characters,
/// ASCII (an international name in its punycode form), and not an address the policy refuses
/// (`crate::address`: loopback, private, metadata, ... written in any literal form).
pub(crate) fn check_url(url: &str, field: &str, addresses: &AddressPolicy) -> Result<()> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .ok_or_else(|| Error::InvalidArgument(format!("{field} must be an http or https URL")))?;
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if url.len() > MAX_URL_LEN
        || host.is_empty()
        || url
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || !c.is_ascii())
    {
        return Err(Error::InvalidArgument(format!(
            "{field} must be an http or https URL with a host, at most {MAX_URL_LEN} bytes, ASCII without spaces"
        )));
    }
    if let Some(refusal) = addresses.url_refusal(url) {
        return Err(Error::InvalidArgument(format!("{field}: {refusal}")));
    }
    Ok(())
}

/// Checks call or webhook headers: HTTP token names, values without line breaks, bounded.
pub(crate) fn check_headers(headers: &BTreeMap<String, String>, field: &str) -> Result<()> {
    if headers.len() > MAX_HEADERS {
        return Err(Error::InvalidArgument(format!(
            "{field} may hold at most {MAX_HEADERS} headers"
        )));
    }
    for (name, value) in headers {
        let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
        if name.is_empty() || !name.chars().all(token) {
            return Err(Error::InvalidArgument(format!(
                "{field}: \"{name}\" is not a valid header name"
            )));
        }
        if value.len() > MAX_HEADER_VALUE_LEN || value.chars().any(|c| c.is_control() && c != '\t')
        {
            return Err(Error::InvalidArgument(format!(
                "{field}: the value of {name} must be at most {MAX_HEADER_VALUE_LEN} bytes without line breaks"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(url: &str) -> Option<String> {
        AddressPolicy::default().url_refusal(url)
    }

    #[test]
    fn literal_forms_of_loopback_are_refused() {
        for url in [
            "http://127.0.0.1/x",
            "http://127.1/",
            "http://2130706433/",
            "http://0x7f000001/",
            "http://0x7F.0.0.1/",
            "http://0177.0.0.1/",
            "http://017700000001/",
            "http://127%2E0.0.1/",
            "http://user:pw@127.0.0.1:8080/",
            "http://127.0.0.1./",
            "http://[::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::ffff:7f00:1]:80/",
            "http://[64:ff9b::7f00:1]/",
            "http://[2002:7f00:1::]/",
            "http://localhost:3000/",
            "http://api.localhost/",
        ] {
            assert!(refused(url).is_some(), "{url} was not refused");
        }
    }

    #[test]
    fn private_metadata_and_special_ranges_are_refused() {
        for (url, reason) in [
            ("http://10.1.2.3/", "private"),
            ("http://172.31.255.255/", "private"),
            ("http://192.168.0.1/", "private"),
            ("http://169.254.169.254/latest/meta-data", "metadata"),
            ("http://169.254.1.1/", "link-local"),
            ("http://100.64.0.1/", "carrier-grade"),
            ("http://0.0.0.0/", "this network"),
            ("http://224.0.0.1/", "multicast"),
            ("http://255.255.255.255/", "broadcast"),
            ("http://[fd00:ec2::254]/", "unique local"),
            ("http://[fe80::1%25eth0]/", "link-local"),
            ("http://[ff02::1]/", "multicast"),
        ] {
            let refusal = refused(url).unwrap_or_default();
            assert!(refusal.contains(reason), "{url}: {refusal:?}");
        }
    }

    #[test]
    fn public_hosts_and_names_pass() {
        for url in [
            "https://example.com/hook",
            "https://93.184.215.14/",
            "http://172.32.0.1/",
            "http://100.128.0.1/",
            "https://[2606:4700::1111]/",
            "https://1.2.3.4.example/",
            "https://localhost.example.com/",
        ] {
            assert_eq!(refused(url), None, "{url}");
        }
    }

    #[test]
    fn allowed_ranges_open_exactly_what_they_name() {
        let policy = AddressPolicy::parse(&["127.0.0.0/8", "fd00::/16"]).unwrap();
        assert_eq!(policy.url_refusal("http://127.0.0.1:9/"), None);
        assert_eq!(policy.url_refusal("http://localhost/"), None);
        assert_eq!(policy.url_refusal("http://[fd00::1]/"), None);
        assert!(policy.url_refusal("http://10.0.0.1/").is_some());
        assert!(policy.url_refusal("http://[fd01::1]/").is_some());
        // The mapped form is an IPv6 address: an IPv4 range does not open it.
        assert!(policy.url_refusal("http://[::ffff:127.0.0.1]/").is_some());
        assert!("10.0.0.0/33".parse::<Cidr>().is_err());
        assert!("10.0.0/8".parse::<Cidr>().is_err());
        assert_eq!(
            "10.1.2.3".parse::<Cidr>().unwrap().to_string(),
            "10.1.2.3/32"
        );
        let odd: Cidr = "172.16.0.0/12".parse().unwrap();
        assert!(odd.contains("172.31.0.1".parse().unwrap()));
        assert!(!odd.contains("172.32.0.1".parse().unwrap()));
    }

    #[test]
    fn ipv4_numbers_follow_the_url_standard() {
        assert_eq!(parse_ipv4("1.2.3.4"), Some(Ipv4Addr::new(1, 2, 3, 4)));
        assert_eq!(parse_ipv4("1.2.772"), Some(Ipv4Addr::new(1, 2, 3, 4)));
        assert_eq!(parse_ipv4("0x"), Some(Ipv4Addr::new(0, 0, 0, 0)));
        assert_eq!(parse_ipv4("4294967296"), None);
        assert_eq!(parse_ipv4("1.256.0.0"), None);
        assert_eq!(parse_ipv4("08.0.0.1"), None);
        assert_eq!(parse_ipv4("example"), None);
    }
}

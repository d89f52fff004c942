// Package webhook is the net/http side of webhooks: the SSRF rule on
// addresses (at registration and on every connection dialled), signing, and
// sending one delivery attempt.
package webhook

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"net/url"
	"time"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// blockedPrefixes are the ranges, beyond what netip's predicates cover
// (loopback, private, link-local, unspecified, multicast), that the IANA
// IPv4 and IPv6 Special-Purpose Address Registries mark not globally
// reachable, and a few deprecated ones no receiver lives on: no webhook may
// reach them unless private addresses are allowed.
var blockedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),          // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),      // shared address space (carrier-grade NAT)
	netip.MustParsePrefix("192.0.0.0/24"),       // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),       // documentation (TEST-NET-1)
	netip.MustParsePrefix("192.88.99.0/24"),     // 6to4 relay anycast (deprecated)
	netip.MustParsePrefix("198.18.0.0/15"),      // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"),    // documentation (TEST-NET-2)
	netip.MustParsePrefix("203.0.113.0/24"),     // documentation (TEST-NET-3)
	netip.MustParsePrefix("240.0.0.0/4"),        // reserved
	netip.MustParsePrefix("255.255.255.255/32"), // limited broadcast
	netip.MustParsePrefix("::/96"),              // IPv4-compatible (deprecated)
	netip.MustParsePrefix("64:ff9b:1::/48"),     // local-use IPv4/IPv6 translation
	netip.MustParsePrefix("100::/64"),           // discard-only
	netip.MustParsePrefix("100:0:0:1::/64"),     // dummy IPv6 prefix
	netip.MustParsePrefix("2001::/23"),          // IETF protocol assignments (Teredo, benchmarking, ORCHID)
	netip.MustParsePrefix("2001:db8::/32"),      // documentation
	netip.MustParsePrefix("3fff::/20"),          // documentation
	netip.MustParsePrefix("5f00::/16"),          // segment routing SIDs
	netip.MustParsePrefix("fec0::/10"),          // site-local (deprecated)
}

// Prefixes whose addresses embed an IPv4 address that a relay would reach:
// NAT64 (well-known prefix) and 6to4.
var (
	nat64   = netip.MustParsePrefix("64:ff9b::/96")
	sixToV4 = netip.MustParsePrefix("2002::/16")
)

// Blocked reports whether a webhook may not connect to ip, and why:
// loopback, private (RFC 1918, IPv6 ULA fc00::/7), link-local (169.254/16
// with the cloud metadata address, fe80::/10), unspecified, multicast and the
// special ranges above. An IPv4-mapped or NAT64/6to4 address is judged by
// the IPv4 address inside it.
func Blocked(ip netip.Addr) (string, bool) {
	ip = ip.Unmap()
	switch {
	case nat64.Contains(ip):
		b := ip.As16()
		return Blocked(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
	case sixToV4.Contains(ip):
		b := ip.As16()
		return Blocked(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}))
	case !ip.IsValid():
		return "not an IP address", true
	case ip.IsLoopback():
		return "a loopback address", true
	case ip.IsPrivate():
		return "a private address", true
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		return "a link-local address", true
	case ip.IsUnspecified():
		return "an unspecified address", true
	case ip.IsMulticast(), ip.IsInterfaceLocalMulticast():
		return "a multicast address", true
	}
	for _, p := range blockedPrefixes {
		if p.Contains(ip) {
			return "a reserved address", true
		}
	}
	return "", false
}

// Resolver looks up a host's addresses; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// AddressChecker is the registration-time SSRF rule.
type AddressChecker struct {
	// AllowPrivate turns the rule off (WORKTRACK_WEBHOOK_ALLOW_PRIVATE).
	AllowPrivate bool
	// Resolver defaults to net.DefaultResolver.
	Resolver Resolver
	// Timeout bounds the lookup; default 5s.
	Timeout time.Duration
}

var _ ports.AddressChecker = AddressChecker{}

// CheckWebhookURL refuses (validation_failed, param url) a URL whose host
// is, or resolves to, any blocked address, or does not resolve at all: a
// name that resolves nowhere cannot be delivered to. The same rule is
// applied again to the address dialled at every delivery, so a name that
// later resolves elsewhere (DNS rebinding) gains nothing.
func (c AddressChecker) CheckWebhookURL(ctx context.Context, rawURL string) error {
	if c.AllowPrivate {
		return nil
	}
	u, err := url.Parse(rawURL)
	if err != nil || u.Hostname() == "" {
		return domain.Invalid("url", "Must be an absolute http or https URL.")
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); err == nil {
		return refuse(host, ip)
	}
	r := c.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	lctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	addrs, err := r.LookupNetIP(lctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) && !dnsErr.IsNotFound {
			return domain.Invalid("url", "The host %s could not be resolved right now; try again.", host)
		}
		return domain.Invalid("url", "The host %s does not resolve to any address.", host)
	}
	for _, ip := range addrs {
		if err := refuse(host, ip); err != nil {
			return err
		}
	}
	return nil
}

// refuse is the answer to a URL whose host is, or resolves to, a blocked
// address. It never shows what a name resolved to: an internal name's
// address is not the caller's to learn. It says how an operator allows such
// URLs, for local development.
func refuse(host string, ip netip.Addr) error {
	why, bad := Blocked(ip)
	if !bad {
		return nil
	}
	const allow = "To deliver to such addresses (local development), the server's operator sets WORKTRACK_WEBHOOK_ALLOW_PRIVATE=true."
	if host == ip.String() {
		return domain.Invalid("url", "Must not point to %s (%s). %s", why, host, allow)
	}
	return domain.Invalid("url", "Must not point to %s (%s resolves to one). %s", why, host, allow)
}

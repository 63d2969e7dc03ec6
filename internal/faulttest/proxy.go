package faulttest

import (
	"io"
	"net"
	gosync "sync"
	"testing"
	"time"
)

// Proxy is a loopback TCP proxy in front of a database server that can
// make the next COMMIT meet a fault: its reply held or dropped, or the
// request itself held (TX-10 fault tests). It understands just enough of
// the wire protocol (Protocol) to find where a COMMIT request ends in the
// client's stream; everything else passes through unchanged. Replies are
// never parsed: the client waits for the answers to what it sent before it
// sends a COMMIT, so whatever the server sends after the COMMIT request is
// its reply.
type Proxy struct {
	t      testing.TB
	proto  Protocol
	target string
	ln     net.Listener

	mu    gosync.Mutex
	armed *Fault
	conns map[*proxyConn]struct{}
	wg    gosync.WaitGroup
	// cut: 0 connections pass; n > 0 the next n connections are closed
	// at once; < 0 every connection is, until Restore.
	cut int
}

// Protocol selects how a Proxy finds a COMMIT in the client's stream.
type Protocol int

const (
	// PostgresWire: frontend messages; a COMMIT is a simple Query "COMMIT",
	// or an extended-protocol pipeline that executes a statement parsed
	// from "COMMIT", up to and including its Sync.
	PostgresWire Protocol = iota + 1
	// MySQLWire: client packets; a COMMIT is a COM_QUERY "COMMIT".
	MySQLWire
)

// FaultKind is what happens to the next COMMIT.
type FaultKind int

const (
	// HoldReply forwards the COMMIT and holds every byte the server sends
	// back afterwards until Fault.Release; then they are delivered (or
	// dropped if the client has gone).
	HoldReply FaultKind = iota + 1
	// DropReply forwards the COMMIT; when the server's reply arrives it is
	// discarded and both connections are closed: the client sees its
	// connection drop after the commit happened.
	DropReply
	// HoldRequest holds the COMMIT request (and whatever the client sends
	// after it) until Fault.Release, then forwards it to the server even
	// if the client has gone meanwhile, as bytes still in flight would be.
	HoldRequest
)

// maxHold bounds every hold, so a test that forgets Release cannot hang.
const maxHold = 30 * time.Second

// Fault is one armed fault. Its channels report its progress.
type Fault struct {
	Kind FaultKind
	// cut is applied to the proxy when a DropReply fault drops the reply
	// (ArmDropAndCut); 0: nothing more.
	cut       int
	fired     chan struct{} // the COMMIT was seen
	release   chan struct{}
	replied   chan struct{} // a held or dropped reply arrived
	forwarded chan struct{} // a held request was written on (or could not be)
	once      struct{ fire, release, replied, forwarded gosync.Once }
}

// Fired is closed once the fault met a COMMIT.
func (f *Fault) Fired() <-chan struct{} { return f.fired }

// Replied is closed once the server's reply to the faulted COMMIT
// reached the proxy (HoldReply, DropReply).
func (f *Fault) Replied() <-chan struct{} { return f.replied }

// Forwarded is closed once a held request was forwarded to the server
// after Release, or failed to be because the server had closed the
// connection (HoldRequest).
func (f *Fault) Forwarded() <-chan struct{} { return f.forwarded }

// Release ends a hold. Safe to call more than once.
func (f *Fault) Release() { f.once.release.Do(func() { close(f.release) }) }

// Released reports whether the hold has ended: Release was called, or
// maxHold passed.
func (f *Fault) Released() bool {
	select {
	case <-f.release:
		return true
	default:
		return false
	}
}

// wait waits for Release; after maxHold it releases the fault itself.
func (f *Fault) wait() {
	select {
	case <-f.release:
	case <-time.After(maxHold):
		f.Release()
	}
}

// NewProxy listens on a loopback port and forwards every connection to
// target (host:port). It is closed, with every hold released, when t ends.
func NewProxy(t testing.TB, proto Protocol, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy: listen: %v", err)
	}
	p := &Proxy{t: t, proto: proto, target: target, ln: ln, conns: map[*proxyConn]struct{}{}}
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

// Addr is the proxy's address (host:port).
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Arm makes the next COMMIT, on any connection, meet a fault of kind k.
func (p *Proxy) Arm(k FaultKind) *Fault {
	f := &Fault{Kind: k, fired: make(chan struct{}), release: make(chan struct{}),
		replied: make(chan struct{}), forwarded: make(chan struct{})}
	p.mu.Lock()
	p.armed = f
	p.mu.Unlock()
	return f
}

// ArmDropAndCut arms a DropReply fault that, at the moment it drops the
// reply, also cuts the proxy: every open connection is closed and then
// the next cut connections (cut < 0: every connection until Restore) are
// closed as soon as they are accepted — the engine unreachable right
// after it committed.
func (p *Proxy) ArmDropAndCut(cut int) *Fault {
	f := p.Arm(DropReply)
	p.mu.Lock()
	f.cut = cut
	p.mu.Unlock()
	return f
}

// Restore ends a cut: connections pass again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	p.cut = 0
	p.mu.Unlock()
}

// cutNow starts cutting n connections (n < 0: all) and closes every open
// one.
func (p *Proxy) cutNow(n int) {
	p.mu.Lock()
	p.cut = n
	open := make([]*proxyConn, 0, len(p.conns))
	for c := range p.conns {
		open = append(open, c)
	}
	p.mu.Unlock()
	for _, c := range open {
		c.close()
	}
}

// refuse reports whether a new connection is to be closed at once.
func (p *Proxy) refuse() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.cut < 0:
		return true
	case p.cut > 0:
		p.cut--
		return true
	}
	return false
}

// take returns the armed fault, disarming it.
func (p *Proxy) take() *Fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.armed
	p.armed = nil
	return f
}

func (p *Proxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	if p.armed != nil {
		p.armed.Release()
	}
	for c := range p.conns {
		c.close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		if p.refuse() {
			_ = client.Close()
			continue
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		c := &proxyConn{p: p, client: client, server: server}
		p.mu.Lock()
		p.conns[c] = struct{}{}
		p.mu.Unlock()
		p.wg.Go(c.upstream)
		p.wg.Go(c.downstream)
	}
}

// proxyConn is one proxied connection.
type proxyConn struct {
	p              *Proxy
	client, server net.Conn

	mu    gosync.Mutex
	reply *Fault // the fault whose reply the downstream pump holds or drops
	once  gosync.Once
}

func (c *proxyConn) close() {
	c.once.Do(func() {
		_ = c.client.Close()
		_ = c.server.Close()
	})
}

// upstream copies client → server, message by message, applying an armed
// fault to the first COMMIT request it completes.
func (c *proxyConn) upstream() {
	defer c.close()
	fr := newFramer(c.p.proto)
	buf := make([]byte, 64<<10)
	var pending []byte
	for {
		n, err := c.client.Read(buf)
		if n > 0 {
			pending = append(pending, buf[:n]...)
			for {
				size, commit := fr.next(pending)
				if size == 0 {
					break
				}
				msg := pending[:size]
				if commit {
					if f := c.p.take(); f != nil {
						c.fault(f, msg, pending[size:])
						return
					}
				}
				if _, werr := c.server.Write(msg); werr != nil {
					return
				}
				pending = pending[size:]
			}
			pending = append([]byte(nil), pending...)
		}
		if err != nil {
			return
		}
	}
}

// fault applies f to a COMMIT request (msg, then rest: what the client
// sent after it) and keeps pumping client → server.
func (c *proxyConn) fault(f *Fault, msg, rest []byte) {
	f.once.fire.Do(func() { close(f.fired) })
	held := append(append([]byte(nil), msg...), rest...)
	switch f.Kind {
	case HoldReply, DropReply:
		c.mu.Lock()
		c.reply = f
		c.mu.Unlock()
	case HoldRequest:
		f.wait()
		_, err := c.server.Write(held)
		f.once.forwarded.Do(func() { close(f.forwarded) })
		if err != nil {
			return
		}
		c.copyRaw(c.server, c.client)
		return
	}
	if _, err := c.server.Write(held); err != nil {
		return
	}
	c.copyRaw(c.server, c.client)
}

// copyRaw copies from src to dst until either fails.
func (c *proxyConn) copyRaw(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
}

// replyFault returns the fault waiting for the reply of this connection's
// COMMIT, if any.
func (c *proxyConn) replyFault() *Fault {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reply
}

// downstream copies server → client, holding or dropping the reply to a
// faulted COMMIT. A held reply waits, with whatever the server sends
// after it, until Release; it is then delivered, unless the client has
// gone.
func (c *proxyConn) downstream() {
	defer c.close()
	buf := make([]byte, 64<<10)
	for {
		n, err := c.server.Read(buf)
		if n > 0 {
			if f := c.replyFault(); f != nil {
				if f.Kind == DropReply {
					c.p.mu.Lock()
					cut := f.cut
					c.p.mu.Unlock()
					if cut != 0 {
						c.p.cutNow(cut)
					}
					f.once.replied.Do(func() { close(f.replied) })
					return
				}
				f.once.replied.Do(func() { close(f.replied) })
				f.wait()
				c.mu.Lock()
				c.reply = nil
				c.mu.Unlock()
			}
			if _, werr := c.client.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

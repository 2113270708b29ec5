// The compiled load generator of bench/bench_serve.py (used when `go` is on PATH; built with the standard
// library only, GO111MODULE=off). It speaks the workq protocol exactly as bench_serve.py's Python client does —
// one request per connection at a time, waiting for its reply, as go-workq does — and prints one JSON line:
// {"n": requests answered, "dt": seconds, "p50_ns": median latency, "p99_ns": 99th percentile}.
//
//	bench_serve_load -addr 127.0.0.1:9922 -conns 16 -seconds 5 -phase add-lease-complete -base N -start-at UNIX
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"sync"
	"time"
)

type conn struct {
	c   net.Conn
	r   *bufio.Reader
	lat []int64
}

func (c *conn) call(req []byte) ([]byte, error) {
	t0 := time.Now()
	if _, err := c.c.Write(req); err != nil {
		return nil, err
	}
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	out := append([]byte(nil), line...)
	if len(line) > 4 && string(line[:4]) == "+OK " && string(line) != "+OK 0\r\n" {
		head, err := c.r.ReadSlice('\n')
		if err != nil {
			return nil, err
		}
		out = append([]byte(nil), head...)
		i := len(head) - 3
		for i >= 0 && head[i] != ' ' {
			i--
		}
		size, err := strconv.Atoi(string(head[i+1 : len(head)-2]))
		if err != nil {
			return nil, fmt.Errorf("bad reply head %q", head)
		}
		if _, err := c.r.Discard(size + 2); err != nil {
			return nil, err
		}
	}
	c.lat = append(c.lat, int64(time.Since(t0)))
	return out, nil
}

func jid(n uint64) string {
	return fmt.Sprintf("%08x-0000-4000-8000-%012x", n>>48, n&0xFFFFFFFFFFFF)
}

func main() {
	addr := flag.String("addr", "127.0.0.1:9922", "server")
	conns := flag.Int("conns", 16, "connections")
	seconds := flag.Float64("seconds", 5, "phase length")
	phase := flag.String("phase", "add-lease-complete", "add-lease-complete or run-result")
	base := flag.Uint64("base", 1<<40, "first job number")
	startAt := flag.Float64("start-at", 0, "Unix time to start at (several processes start together)")
	flag.Parse()

	cs := make([]*conn, *conns)
	for k := range cs {
		c, err := net.Dial("tcp", *addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		c.(*net.TCPConn).SetNoDelay(true)
		cs[k] = &conn{c: c, r: bufio.NewReaderSize(c, 65536), lat: make([]int64, 0, 1<<16)}
	}
	if *startAt > 0 {
		time.Sleep(time.Until(time.Unix(0, int64(*startAt*1e9))))
	}
	t0 := time.Now()
	stop := t0.Add(time.Duration(*seconds * float64(time.Second)))
	var wg sync.WaitGroup
	errs := make(chan error, *conns)
	half := *conns / 2
	for k, c := range cs {
		wg.Add(1)
		go func(k int, c *conn) {
			defer wg.Done()
			var err error
			n := uint64(0)
			switch {
			case *phase == "add-lease-complete":
				q := "bench-" + strconv.FormatUint(*base, 16) + "-" + strconv.Itoa(k) // its own queue
				for time.Now().Before(stop) && err == nil {
					j := jid(*base + uint64(k)*10_000_000 + n)
					n++
					if _, err = c.call([]byte("add " + j + " " + q + " 60000 3600000 16\r\n0123456789abcdef\r\n")); err != nil {
						break
					}
					if _, err = c.call([]byte("lease " + q + " 1000\r\n")); err != nil {
						break
					}
					_, err = c.call([]byte("complete " + j + " 2\r\nok\r\n"))
				}
			case k < half: // run-result: runners
				for time.Now().Before(stop) && err == nil {
					j := jid(*base + uint64(k)*10_000_000 + n)
					n++
					if _, err = c.call([]byte("run " + j + " bench-run 5000 2000 16\r\n0123456789abcdef\r\n")); err != nil {
						break
					}
					if n%10 == 0 {
						_, err = c.call([]byte("result " + j + " 0\r\n"))
					}
				}
			default: // run-result: workers
				end := stop.Add(500 * time.Millisecond)
				for time.Now().Before(end) {
					var line []byte
					if line, err = c.call([]byte("lease bench-run 200\r\n")); err != nil {
						break
					}
					if len(line) > 0 && line[0] == '-' {
						if !time.Now().Before(stop) {
							break
						}
						continue
					}
					i := 0
					for i < len(line) && line[i] != ' ' {
						i++
					}
					if _, err = c.call([]byte("complete " + string(line[:i]) + " 2\r\nok\r\n")); err != nil {
						break
					}
				}
			}
			if err != nil {
				errs <- err
			}
		}(k, c)
	}
	wg.Wait()
	dt := time.Since(t0).Seconds()
	close(errs)
	for err := range errs {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var lat []int64
	for _, c := range cs {
		lat = append(lat, c.lat...)
		c.c.Close()
	}
	sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
	pick := func(p float64) int64 {
		if len(lat) == 0 {
			return 0
		}
		i := int(p * float64(len(lat)))
		if i >= len(lat) {
			i = len(lat) - 1
		}
		return lat[i]
	}
	json.NewEncoder(os.Stdout).Encode(map[string]interface{}{"n": len(lat), "dt": dt, "p50_ns": pick(0.5),
		"p99_ns": pick(0.99)})
}

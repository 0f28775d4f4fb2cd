#!/usr/bin/env python3
"""Attacks on a running job's two ports (the rendezvous, MASTER_PORT, and the liveness channel, MASTER_PORT + 50), for
scripts/ports-attack.sh. Standard library only.

    ports_attack.py sniff --ports P,Q --out FILE
        Records, until SIGTERM, every TCP payload on the loopback interface to or from ports P and Q as JSON lines
        (needs root: an AF_PACKET socket). The "replay" attacks take a real rank's bytes from such a record.
    ports_attack.py attack --phase rendezvous|running --host H --port P [--size N] [--capture FILE]...
                           [--log FILE]... [--secret-file F] [--settle S] [--hold-seconds S] [--connections N]
                           [--out FILE.jsonl]
        Runs the phase's attacks one after the other. For each: what was sent, what the job's rank 0 answered
        (an ERROR frame's text, a close after n bytes, the port closed), and the WARN lines the job's logs gained
        from the attack's start to SETTLE seconds after its end. One JSON line per attack on stdout (and --out).
        Phase rendezvous (rank 0 waits for a rank that has not started): attacks on MASTER_PORT. Phase running
        (every rank is in the job): attacks on the liveness channel, and MASTER_PORT once more (closed by then).
    ports_attack.py siege --host H --port P [--slots N] [--liveness-slots M] [--seconds S] [--ready-file F]
                          [--out FILE.json]
        Holds rank 0's waiting slots on both ports (N silent connections on the rendezvous, default 24, more than its
        16 + peers; M on the liveness channel, default 72, more than its 64 + world size; every one reconnected at
        once when rank 0 closes it) and keeps a trickle on each (a bad opening, then one byte every 100 ms,
        reconnected when closed), until SIGTERM or S seconds (default 60); writes F once the slots are held, so that
        the caller can start a real rank into the siege. Prints (and writes) one JSON object: reconnects per port,
        how long rank 0 kept each trickle (the longest), connections refused.
    ports_attack.py relay --host H --port P --listen R [--only KIND] [--out FILE.jsonl]
        A relay on R and R + 50 to P and P + 50, as a spoofed address or a hijacked MASTER_ADDR puts one in the path
        of a rank: it forwards both directions and, once each, alters the records that follow the handshake: the
        first unique-id frame from rank 0 (one bit of its payload flipped), a forged line to the rank (LOST 1 ...)
        after its 4th line from rank 0, an earlier line from rank 0 sent again after its 12th, and an earlier line
        of the rank sent again to rank 0 after its 8th (--only id, forge, replay-down or replay-up: that one alone).
        One JSON line per alteration and per connection's end.
    ports_attack.py check-secret --capture FILE --secret-file F
        Exit 1 when the captured bytes hold the secret (it must never travel), else print how many bytes were read.

The attacks (a name, then what it does):
    impostor     a HELLO for rank 1 (connected, or about to be) with no proof of the job's secret
    lines        LOST, LEFT and JOINED lines, as only rank 0 sends them (running: one connection each, three attacks)
    long-line    128 MiB without a newline (or, on the rendezvous, a frame header announcing it and the bytes)
    random       64 KiB of random bytes
    hold         N connections (default 1000) opened and held HOLD seconds, then closed
    wrong-secret the whole exchange done right with another job's secret
    replay       a real rank's recorded exchange (AUTH and HELLO) sent again on a new connection
    after-start  (running, rendezvous port) the impostor HELLO once the job runs: the port is closed by then
    world-size   (rendezvous) a HELLO for rank 1 claiming a world size of 99, no proof (a job without a secret
                 must refuse it, not end its rendezvous)
    impostor-drop (rendezvous, liveness port) a HELLO for the rank that has not started yet, then the connection
                 dropped at once: the real rank joins later and the job must run on, nobody marked lost
    log-flood    (running, liveness port) 2,000 unreadable lines on one connection, then 200 connections with one
                 each: at most one WARN line
"""
import argparse
import hashlib
import hmac
import json
import os
import re
import resource
import secrets
import select
import selectors
import signal
import socket
import struct
import sys
import time

MAGIC = 0x4E344A52
VERSION = 3   # RendezvousWire.VERSION: 3 sealed the frames after the handshake and added RETRY
FRAME_TYPES = {1: "CHALLENGE", 2: "HELLO", 3: "ID", 4: "ERROR", 5: "AUTH_CHALLENGE", 6: "AUTH", 7: "AUTH_OK",
               8: "RETRY"}
OTHER_SECRET = "another-jobs-secret-" + "9" * 24
WARN = re.compile(r"\bWARN\b")


# ----------------------------------------------------------------------------------------------------------- sniff

def sniff(ports, out_path):
    """Every TCP payload on lo to or from `ports`, one JSON line each, until SIGTERM."""
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.ntohs(0x0003))
    s.bind(("lo", 0))
    stop = []
    signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
    signal.signal(signal.SIGINT, lambda *a: stop.append(1))
    with open(out_path, "w", encoding="utf-8") as out:
        print(json.dumps({"sniffing": sorted(ports)}), file=out, flush=True)
        while not stop:
            r, _, _ = select.select([s], [], [], 0.2)
            if not r:
                continue
            frame, addr = s.recvfrom(262144)
            if addr[2] == socket.PACKET_OUTGOING:   # lo shows each packet twice: keep the incoming copy
                continue
            if len(frame) < 34 or struct.unpack("!H", frame[12:14])[0] != 0x0800:
                continue
            ip = frame[14:]
            ihl = (ip[0] & 0x0F) * 4
            if ip[9] != 6:
                continue
            total = struct.unpack("!H", ip[2:4])[0]
            tcp = ip[ihl:total]
            sport, dport, seq = struct.unpack("!HHI", tcp[:8])
            off = (tcp[12] >> 4) * 4
            data = tcp[off:]
            if not data or (sport not in ports and dport not in ports):
                continue
            print(json.dumps({"t": time.time(), "src": socket.inet_ntoa(ip[12:16]), "sport": sport,
                              "dst": socket.inet_ntoa(ip[16:20]), "dport": dport, "seq": seq,
                              "data": data.hex()}), file=out, flush=True)


def streams(capture_paths):
    """The client-to-server byte streams of the records, {(sport, dport, file): bytes}, in order, without repeats."""
    got = {}
    for path in capture_paths:
        try:
            lines = open(path, encoding="utf-8").read().splitlines()
        except OSError:
            continue
        segs = {}
        ports = set()
        for line in lines:
            try:
                d = json.loads(line)
            except ValueError:
                continue
            if "sniffing" in d:
                ports = set(d["sniffing"])
                continue
            if d["dport"] in ports:
                key = (d["sport"], d["dport"], path)
                segs.setdefault(key, {})[d["seq"]] = bytes.fromhex(d["data"])
        for key, by_seq in segs.items():
            got[key] = b"".join(by_seq[k] for k in sorted(by_seq))
    return got


def recorded_exchange(capture_paths, kind):
    """A real rank's recorded opening: the rendezvous's AUTH and HELLO frames, or the liveness's AUTH and HELLO
    lines; the latest one recorded, or None."""
    best = None
    for (sport, dport, path), data in streams(capture_paths).items():
        if kind == "rendezvous":
            frames = split_frames(data)
            types = [t for t, _ in frames]
            if types[:2] == [6, 2]:
                cand = b"".join(frame(t, p) for t, p in frames[:2])
            else:
                continue
        else:
            lines = data.split(b"\n")
            if len(lines) < 2 or not lines[0].startswith(b"AUTH ") or not lines[1].startswith(b"HELLO "):
                continue
            cand = lines[0] + b"\n" + lines[1] + b"\n"
        best = (path, sport, dport, cand)
    return best


def split_frames(data):
    frames = []
    while len(data) >= 10:
        magic, version, ftype, length = struct.unpack(">IBBI", data[:10])
        if magic != MAGIC or len(data) < 10 + length:
            break
        frames.append((ftype, data[10:10 + length]))
        data = data[10 + length:]
    return frames


# --------------------------------------------------------------------------------------------------------- helpers

def frame(ftype, payload):
    return struct.pack(">IBBI", MAGIC, VERSION, ftype, len(payload)) + payload


def prove(key, purpose, server_nonce, client_nonce, side):
    msg = "|".join((purpose, server_nonce, client_nonce, side)).encode()
    return hmac.new(key.encode(), msg, hashlib.sha256).hexdigest()


def connect(host, port, timeout=5.0):
    s = socket.create_connection((host, port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def read_exact(s, n):
    b = b""
    while len(b) < n:
        chunk = s.recv(n - len(b))
        if not chunk:
            raise EOFError("closed after %d of %d bytes" % (len(b), n))
        b += chunk
    return b


def read_frame(s):
    magic, version, ftype, length = struct.unpack(">IBBI", read_exact(s, 10))
    if magic != MAGIC:
        raise ValueError("bad magic 0x%08x" % magic)
    return ftype, read_exact(s, min(length, 4096))


def read_line(s, limit=4096):
    b = b""
    while not b.endswith(b"\n") and len(b) < limit:
        c = s.recv(1)
        if not c:
            break
        b += c
    return b.decode("utf-8", "replace").rstrip("\n")


def send_all(s, data):
    """Sends what the peer takes; returns (bytes sent, why it stopped or None)."""
    sent = 0
    try:
        view = memoryview(data)
        while sent < len(data):
            n = s.send(view[sent:sent + 65536])
            sent += n
    except OSError as e:
        return sent, e.__class__.__name__
    return sent, None


def stream_send(s, total, chunk=b"x" * (1 << 20)):
    """Sends `total` bytes of `chunk` until the peer stops taking them; returns (sent, why it stopped)."""
    sent = 0
    s.settimeout(10.0)
    try:
        while sent < total:
            n = s.send(chunk[:min(len(chunk), total - sent)])
            sent += n
    except OSError as e:
        return sent, e.__class__.__name__
    return sent, None


def answer_after(s, wait=3.0):
    """What rank 0 did next: an ERROR frame's text (rendezvous), a line (liveness), or a close."""
    s.settimeout(wait)
    got = b""
    try:
        while len(got) < 8192:
            c = s.recv(4096)
            if not c:
                return got, "closed"
            got += c
    except socket.timeout:
        return got, "open"
    except OSError as e:
        return got, e.__class__.__name__
    return got, "open"


def describe_rendezvous(got, state):
    frames = split_frames(got)
    for t, p in frames:
        if t == 4:
            return "ERROR frame: " + p.decode("utf-8", "replace") + "; then " + state
    return "%s after %d bytes%s" % (state, len(got), (" (" + ", ".join(FRAME_TYPES.get(t, str(t))
                                                                          for t, _ in frames) + ")") if frames else "")


def describe_lines(got, state):
    text = got.decode("utf-8", "replace").strip()
    return (("answered " + repr(text[:120]) + "; ") if text else "") + state


# --------------------------------------------------------------------------------------------------------- attacks

def rz_open(host, port):
    s = connect(host, port)
    t, nonce = read_frame(s)
    return s, t, nonce


def rz_impostor(a):
    s, t, nonce = rz_open(a.host, a.port)
    with s:
        s.sendall(frame(2, struct.pack(">iiB", 1, a.size, 0)))
        return "HELLO frame for rank 1 of %d, no proof (challenge was %s)" % (a.size, FRAME_TYPES.get(t)), \
            describe_rendezvous(*answer_after(s))


def rz_lines(a):
    s = connect(a.host, a.port)
    with s:
        read_frame(s)
        s.sendall(b"LOST 1 intruder 4242\nLEFT 1\nJOINED 1 intruder 4242\n")
        return "LOST, LEFT, JOINED lines", describe_rendezvous(*answer_after(s))


def rz_long(a):
    s = connect(a.host, a.port)
    with s:
        read_frame(s)
        head = struct.pack(">IBBI", MAGIC, VERSION, 6, 128 << 20)
        s.sendall(head)
        sent, why = stream_send(s, 128 << 20)
        got, state = answer_after(s, 1.0)
        return "AUTH frame header announcing 128 MiB, then the bytes", \
            "took %d bytes%s; %s" % (sent, "" if why is None else " then " + why, describe_rendezvous(got, state))


def rz_random(a):
    s = connect(a.host, a.port)
    with s:
        read_frame(s)
        sent, why = send_all(s, os.urandom(64 << 10))
        return "64 KiB of random bytes", "took %d bytes%s; %s" % (
            sent, "" if why is None else " then " + why, describe_rendezvous(*answer_after(s)))


def rz_wrong_secret(a):
    s, t, nonce = rz_open(a.host, a.port)
    with s:
        cn = secrets.token_bytes(32)
        proof = prove(OTHER_SECRET, "rendezvous", nonce.hex(), cn.hex(), "client")
        s.sendall(frame(6, cn + bytes.fromhex(proof)))
        return "AUTH proved with another job's secret", describe_rendezvous(*answer_after(s))


def rz_replay(a):
    rec = recorded_exchange(a.capture, "rendezvous")
    if rec is None:
        return "replay", "not run: no rank's rendezvous exchange was recorded (needs root for the capture)"
    path, sport, dport, data = rec
    s, t, nonce = rz_open(a.host, a.port)
    with s:
        s.sendall(data)
        return "a real rank's AUTH and HELLO frames (%d bytes, recorded from port %d in %s)" % (
            len(data), dport, os.path.basename(os.path.dirname(path)) or path), describe_rendezvous(*answer_after(s))


def rz_after_start(a):
    try:
        s = connect(a.host, a.port, 2.0)
    except ConnectionRefusedError:
        return "HELLO for rank 1 on MASTER_PORT once the job runs", "connection refused: the port is closed"
    with s:
        s.sendall(frame(2, struct.pack(">iiB", 1, a.size, 0)))
        return "HELLO for rank 1 on MASTER_PORT once the job runs", describe_rendezvous(*answer_after(s))


def lv_open(a):
    s = connect(a.host, a.port)
    s.settimeout(3.0)
    first = read_line(s, 512)
    return s, first


def lv_impostor(a):
    s, first = lv_open(a)
    with s:
        s.sendall(b"HELLO 1 intruder 4242\n")
        return "HELLO 1 intruder 4242, no proof (rank 1 connected; rank 0 said %r)" % first[:10], \
            describe_lines(*answer_after(s))


def lv_line(word):
    text = {"LOST": "LOST 1 intruder 4242", "LEFT": "LEFT 1", "JOINED": "JOINED 1 intruder 4242"}[word]

    def attack(a):
        s, first = lv_open(a)
        with s:
            s.sendall(text.encode() + b"\n")
            return text, describe_lines(*answer_after(s))
    return attack


def lv_long(a):
    s, first = lv_open(a)
    with s:
        sent, why = stream_send(s, 128 << 20)
        got, state = answer_after(s, 1.0)
        return "128 MiB without a newline", "took %d bytes%s; %s" % (
            sent, "" if why is None else " then " + why, describe_lines(got, state))


def lv_random(a):
    s, first = lv_open(a)
    with s:
        sent, why = send_all(s, os.urandom(64 << 10))
        return "64 KiB of random bytes", "took %d bytes%s; %s" % (
            sent, "" if why is None else " then " + why, describe_lines(*answer_after(s)))


def lv_wrong_secret(a):
    s, first = lv_open(a)
    with s:
        if not first.startswith("CHALLENGE "):
            return "AUTH with another job's secret", "no CHALLENGE (%r): the channel is unauthenticated" % first
        cn = secrets.token_hex(32)
        s.sendall(("AUTH %s %s\n" % (cn, prove(OTHER_SECRET, "liveness", first.split()[1], cn, "client"))).encode())
        return "AUTH proved with another job's secret", describe_lines(*answer_after(s))


def lv_replay(a):
    rec = recorded_exchange(a.capture, "liveness")
    if rec is None:
        return "replay", "not run: no rank's liveness exchange was recorded (needs root for the capture)"
    path, sport, dport, data = rec
    s, first = lv_open(a)
    with s:
        s.sendall(data)
        return "a real rank's AUTH and HELLO lines (%s, recorded from port %d)" % (
            data.split(b"\n")[1].decode()[:40], dport), describe_lines(*answer_after(s))


def rz_world_size(a):
    s, t, nonce = rz_open(a.host, a.port)
    with s:
        s.sendall(frame(2, struct.pack(">iiB", 1, 99, 0)))
        return "HELLO frame for rank 1 of 99 (the job has %d), no proof (challenge was %s)" % (
            a.size, FRAME_TYPES.get(t)), describe_rendezvous(*answer_after(s))


def lv_impostor_drop(a):
    s, first = lv_open(a)
    last = a.size - 1
    with s:
        s.sendall(("HELLO %d intruder 4242\n" % last).encode())
        time.sleep(0.2)
    return "HELLO %d intruder 4242 (the rank not started yet), dropped 0.2 s later (rank 0 said %r)" % (
        last, first[:10]), "closed by the attacker"


def lv_log_flood(a):
    s, first = lv_open(a)
    with s:
        sent, why = send_all(s, b"".join(b"PING x%d ~zz\n" % i for i in range(2000)))
        got, state = answer_after(s, 1.0)
    opened = 0
    for i in range(200):
        try:
            c = connect(a.host, a.port, 2.0)
            c.sendall(b"NONSENSE %d\n" % i)
            c.close()
            opened += 1
        except OSError:
            pass
    return "2,000 unreadable lines on one connection, then %d connections with one each" % opened, \
        "took %d bytes%s; %s" % (sent, "" if why is None else " then " + why, describe_lines(got, state))


def hold(a):
    """N connections opened at once and held; how many rank 0 closed, how many it kept waiting."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = a.connections + 64
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    socks = []
    refused = 0
    for _ in range(a.connections):
        try:
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex((a.host, a.port))
            socks.append(s)
        except OSError:
            refused += 1
    t_end = time.time() + a.hold_seconds
    closed = 0
    sel = selectors.DefaultSelector()   # epoll: select() stops at descriptor 1024
    for s in socks:
        sel.register(s, selectors.EVENT_READ)
    while time.time() < t_end and closed < len(socks):
        for key, _ in sel.select(0.2):
            s = key.fileobj
            try:
                while True:
                    if not s.recv(4096):
                        raise ConnectionResetError()
            except BlockingIOError:
                pass
            except OSError:
                sel.unregister(s)
                closed += 1
    open_at_end = len(socks) - closed
    sel.close()
    for s in socks:
        s.close()
    return "%d connections opened at once, held %.0f s" % (a.connections, a.hold_seconds), \
        "rank 0 closed %d (at accept or at their deadline), %d still open when the attacker let go%s" % (
            closed, open_at_end, "" if not refused else ", %d could not be opened here" % refused)


RENDEZVOUS = [("impostor", rz_impostor), ("lines", rz_lines), ("long-line", rz_long), ("random", rz_random),
              ("wrong-secret", rz_wrong_secret), ("replay", rz_replay), ("hold", hold), ("world-size", rz_world_size),
              ("impostor-drop", lv_impostor_drop)]
LIVENESS_IN_RENDEZVOUS = {"impostor-drop"}
RUNNING = [("impostor", lv_impostor), ("lines LOST", lv_line("LOST")), ("lines LEFT", lv_line("LEFT")),
           ("lines JOINED", lv_line("JOINED")), ("long-line", lv_long), ("random", lv_random),
           ("wrong-secret", lv_wrong_secret), ("replay", lv_replay), ("hold", hold), ("log-flood", lv_log_flood),
           ("after-start", rz_after_start)]


def warn_lines(logs):
    out = []
    for path in logs:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                out.extend(line.rstrip("\n") for line in f if WARN.search(line))
        except OSError:
            pass
    return out


def attack(a):
    phase = RENDEZVOUS if a.phase == "rendezvous" else RUNNING
    results = []
    base = a.port
    for name, fn in phase:
        if a.only and name.split()[0] not in a.only:
            continue
        if name.split()[0] in a.skip:
            continue
        port = base if ((a.phase == "rendezvous" and name not in LIVENESS_IN_RENDEZVOUS)
                        or name == "after-start") else base + 50
        a.port = port
        before = warn_lines(a.log)
        t0 = time.time()
        try:
            sent, outcome = fn(a)
        except ConnectionRefusedError:
            sent, outcome = name, "connection refused: nothing listens on port %d" % port
        except Exception as e:   # what went wrong on the attacker's side is part of the report
            sent, outcome = name, "attacker: %s: %s" % (e.__class__.__name__, e)
        took = time.time() - t0
        time.sleep(a.settle)
        after = warn_lines(a.log)
        new = after[len(before):] if after[:len(before)] == before else [w for w in after if w not in before]
        row = {"phase": a.phase, "attack": name, "port": port, "sent": sent, "outcome": outcome,
               "seconds": round(took, 2), "warn_lines": len(new), "warns": new[:3]}
        results.append(row)
        print(json.dumps(row), flush=True)
        if a.out:
            with open(a.out, "a", encoding="utf-8") as f:
                print(json.dumps(row), file=f)
    a.port = base
    return results


# --------------------------------------------------------------------------------------------- siege and relay

def siege(a):
    """Holds the waiting slots of both ports and a trickle on each, reconnecting whatever rank 0 closes."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 2 * (a.slots + a.liveness_slots) + 64
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    stop = []
    signal.signal(signal.SIGTERM, lambda *x: stop.append(1))
    ports = [a.port, a.port + 50]
    stats = {p: {"reconnects": 0, "refused": 0, "trickle_longest_s": 0.0, "trickles": 0} for p in ports}
    sel = selectors.DefaultSelector()
    conns = {}   # socket -> (port, kind, opened)

    def open_one(port, kind):
        try:
            c = socket.socket()
            c.setblocking(False)
            c.connect_ex((a.host, port))
            sel.register(c, selectors.EVENT_READ)
            conns[c] = (port, kind, time.time())
            return True
        except OSError:
            stats[port]["refused"] += 1
            return False

    for p in ports:
        for _ in range(a.slots if p == a.port else a.liveness_slots):
            open_one(p, "slot")
        open_one(p, "trickle")
    ready_written = False
    t_end = time.time() + a.seconds
    last_drip = 0.0
    while not stop and time.time() < t_end:
        if not ready_written and time.time() > t_end - a.seconds + 0.5:
            if a.ready_file:
                open(a.ready_file, "w").close()
            ready_written = True
        for key, _ in sel.select(0.05):
            c = key.fileobj
            closed = False
            try:
                while True:
                    if not c.recv(4096):
                        closed = True
                        break
            except BlockingIOError:
                pass
            except OSError:
                closed = True
            if closed:
                port, kind, opened = conns.pop(c)
                sel.unregister(c)
                c.close()
                if kind == "trickle":
                    st = stats[port]
                    st["trickles"] += 1
                    st["trickle_longest_s"] = round(max(st["trickle_longest_s"], time.time() - opened), 2)
                else:
                    stats[port]["reconnects"] += 1
                open_one(port, kind)   # at once: the attacker that wins every freed slot if the newest goes
        now = time.time()
        if now - last_drip >= 0.1:
            last_drip = now
            for c, (port, kind, opened) in list(conns.items()):
                if kind != "trickle":
                    continue
                try:
                    if now - opened < 0.15:
                        c.send(b"\x00\x00\x00\x00\x02\x02" if port == a.port else b"GARBAGE")
                    else:
                        c.send(b"x")
                except OSError:
                    pass
    for c in list(conns):
        c.close()
    out = {"siege_seconds": round(a.seconds if not stop else time.time() - (t_end - a.seconds), 1),
           "slots_per_port": a.slots, "liveness_slots": a.liveness_slots,
           "ports": {str(p): st for p, st in stats.items()}}
    print(json.dumps(out), flush=True)
    if a.out:
        with open(a.out, "w", encoding="utf-8") as f:
            print(json.dumps(out), file=f)
    return 0


def relay(a):
    """Forwards R -> P and R + 50 -> P + 50 and alters, once each, records after the handshake."""
    import threading
    done = {"id": False, "forge": False, "replay_down": False, "replay_up": False}
    if a.only:   # the others count as done: never made
        for k in done:
            done[k] = k != a.only.replace("-", "_")
    lock = threading.Lock()
    stop = []
    signal.signal(signal.SIGTERM, lambda *x: stop.append(1))

    def event(**kw):
        kw["t"] = round(time.time(), 3)
        line = json.dumps(kw)
        print(line, flush=True)
        if a.out:
            with lock, open(a.out, "a", encoding="utf-8") as f:
                print(line, file=f)

    def once(name):
        with lock:
            if done[name]:
                return False
            done[name] = True
            return True

    def pump_frames(src, dst):   # rendezvous, rank 0 -> rank: flip a bit of the first ID frame's payload
        buf = b""
        while True:
            data = src.recv(65536)
            if not data:
                return
            buf += data
            out = b""
            while len(buf) >= 10:
                magic, version, ftype, length = struct.unpack(">IBBI", buf[:10])
                if magic != MAGIC or length > (1 << 20):
                    out += buf
                    buf = b""
                    break
                if len(buf) < 10 + length:
                    break
                fr = bytearray(buf[:10 + length])
                buf = buf[10 + length:]
                if ftype == 3 and length > 0 and once("id"):
                    fr[10] ^= 1
                    event(port=a.port, alteration="the unique-id frame from rank 0: one bit of its payload "
                                                  "flipped (%d bytes)" % length)
                out += bytes(fr)
            if out:
                dst.sendall(out)

    def pump_lines(src, dst, down):
        buf = b""
        seen = []
        while True:
            data = src.recv(65536)
            if not data:
                return
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                line += b"\n"
                seen.append(line)
                dst.sendall(line)
                if down and len(seen) == 4 and once("forge"):
                    dst.sendall(b"LOST 1 intruder 4242\n")
                    event(port=a.port + 50, alteration="a forged line to the rank after rank 0's 4th: LOST 1 "
                                                       "intruder 4242")
                if down and len(seen) == 12 and once("replay_down"):
                    dst.sendall(seen[5])
                    event(port=a.port + 50, alteration="rank 0's 6th line sent to the rank again: %r"
                          % seen[5][:60].decode("utf-8", "replace"))
                if not down and len(seen) == 8 and once("replay_up"):
                    dst.sendall(seen[4])
                    event(port=a.port + 50, alteration="the rank's 5th line sent to rank 0 again: %r"
                          % seen[4][:60].decode("utf-8", "replace"))

    def serve(listen_port, target_port, lines):
        ls = socket.socket()
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind((a.host, listen_port))
        ls.listen(64)
        ls.settimeout(0.5)
        while not stop:
            try:
                c, _ = ls.accept()
            except socket.timeout:
                continue
            try:
                up = socket.create_connection((a.host, target_port), timeout=5)
            except OSError as e:
                event(port=target_port, connection="could not reach rank 0: %s" % e)
                c.close()
                continue
            c.settimeout(None)
            up.settimeout(None)

            def run(src, dst, down, cs=(c, up)):
                try:
                    if lines:
                        pump_lines(src, dst, down)
                    elif down:
                        pump_frames(src, dst)
                    else:
                        while True:
                            d = src.recv(65536)
                            if not d:
                                break
                            dst.sendall(d)
                except OSError as e:
                    event(port=target_port, connection="%s ended: %s" % ("rank 0 -> rank" if down else
                                                                         "rank -> rank 0", e.__class__.__name__))
                finally:
                    for x in cs:
                        try:
                            x.shutdown(socket.SHUT_RDWR)
                        except OSError:
                            pass
            threading.Thread(target=run, args=(up, c, True), daemon=True).start()
            threading.Thread(target=run, args=(c, up, False), daemon=True).start()

    threading.Thread(target=serve, args=(a.listen, a.port, False), daemon=True).start()
    threading.Thread(target=serve, args=(a.listen + 50, a.port + 50, True), daemon=True).start()
    while not stop:
        time.sleep(0.2)
    event(relay="stopped")
    return 0


def check_secret(a):
    secret = open(a.secret_file, encoding="utf-8").read().strip().encode()
    n = 0
    for path in a.capture:
        for line in open(path, encoding="utf-8").read().splitlines():
            d = json.loads(line)
            if "data" in d:
                data = bytes.fromhex(d["data"])
                n += len(data)
                if secret in data or secret.hex().encode() in data:
                    print("the secret travelled: %s, port %d -> %d" % (path, d["sport"], d["dport"]))
                    return 1
    print("%d captured bytes, the secret in none of them" % n)
    return 0


def report(a):
    """ports.md from the job directories: the job's facts (job.txt) and a table of its attacks (attacks.jsonl)."""
    out = ["# Attacks on a running job's ports", ""]
    worst_all = 0
    for d in a.dirs:
        facts = {}
        try:
            for line in open(os.path.join(d, "job.txt"), encoding="utf-8"):
                k, _, v = line.rstrip("\n").partition("=")
                facts[k] = v
        except OSError:
            out += ["## %s: skipped or not run" % os.path.basename(os.path.normpath(d)), ""]
            continue
        rows = []
        try:
            rows = [json.loads(line) for line in open(os.path.join(d, "attacks.jsonl"), encoding="utf-8")]
        except OSError:
            pass
        worst = max([r["warn_lines"] for r in rows] or [0])
        worst_all = max(worst_all, worst)
        size = int(facts.get("size", "0"))
        ran = facts.get("results_ok") == str(size) and all(x == "0" for x in facts.get("statuses", "x").split())
        siege = {}
        try:
            siege = json.loads(facts.get("siege") or "{}")
        except ValueError:
            pass
        held = "; ".join("port %s: %d reconnects, %d trickles, the longest kept %.2f s" % (
            p, st["reconnects"], st["trickles"], st["trickle_longest_s"]) for p, st in siege.get("ports", {}).items())
        relay_rows = []
        try:
            relay_rows = [json.loads(line) for line in open(os.path.join(d, "relay.jsonl"), encoding="utf-8")]
        except OSError:
            pass
        altered = [r["alteration"] for r in relay_rows if "alteration" in r]
        ended = [r["connection"] for r in relay_rows if "connection" in r]
        out += ["## %s, %s ranks (%s), %s: %s" % (facts.get("launcher"), size, facts.get("layout", "one GPU a rank"),
                                             "with the secret" if facts.get("secret") == "yes" else "no secret",
                                             "ran to the end, every sum correct" if ran else "DID NOT run to the end"),
                "",
                "Siege (%s slots on the rendezvous, %s on the liveness channel, each reconnected at once, and a trickle "
                "on each): the last rank's START line %s ms after it was let go; %s." % (
                    siege.get("slots_per_port", "?"), siege.get("liveness_slots", "?"), facts.get("siege_arrival_ms"),
                                                    held or "no figures"),
                "",
                ("Relay in the last rank's path: %s%s." % ("; ".join(altered) or "nothing altered",
                                                           (" (relayed connections ended: %s)" % "; ".join(ended[:6]))
                                                           if ended else ""))
                if facts.get("secret") == "yes" else "No relay: without a secret no record is authenticated.",
                "",
                "RESULT ok from %s of %s ranks; exit statuses %s; %s WARN lines in the job's logs (%s attributed to the "
                "attacks); lines naming a lost rank or an error: %s; hs_err files: %s; %s s in all. Capture: %s." % (
                    facts.get("results_ok"), size, facts.get("statuses"), facts.get("warn_lines"),
                    sum(r["warn_lines"] for r in rows), facts.get("lost_lines"), facts.get("hs_err"),
                    facts.get("seconds"), facts.get("secret_check")),
                "",
                "| phase | attack | sent | what rank 0 did | WARN lines | the line |",
                "|---|---|---|---|---|---|"]
        for r in rows:
            line = r["warns"][0] if r["warns"] else ""
            m = re.search(r"\bWARN\b\s*(.*)$", line)
            line = m.group(1) if m else line
            out.append("| %s | %s | %s | %s | %d | %s |" % (
                r["phase"], r["attack"], cell(r["sent"], 90), cell(r["outcome"], 160), r["warn_lines"],
                cell(line, 220)))
        out.append("")
    with open(a.out, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")
    return 0 if worst_all <= 1 else 1


def cell(text, width):
    text = str(text).replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= width else text[:width - 3] + "..."


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    sn = sub.add_parser("sniff")
    sn.add_argument("--ports", required=True)
    sn.add_argument("--out", required=True)
    at = sub.add_parser("attack")
    at.add_argument("--phase", choices=["rendezvous", "running"], required=True)
    at.add_argument("--host", default="127.0.0.1")
    at.add_argument("--port", type=int, required=True, help="MASTER_PORT (the liveness channel is at + 50)")
    at.add_argument("--size", type=int, default=2)
    at.add_argument("--capture", action="append", default=[])
    at.add_argument("--log", action="append", default=[])
    at.add_argument("--settle", type=float, default=2.5)
    at.add_argument("--hold-seconds", type=float, default=6.0)
    at.add_argument("--connections", type=int, default=1000)
    at.add_argument("--only", action="append", default=[])
    at.add_argument("--skip", action="append", default=[])
    at.add_argument("--out")
    sg = sub.add_parser("siege")
    sg.add_argument("--host", default="127.0.0.1")
    sg.add_argument("--port", type=int, required=True)
    sg.add_argument("--slots", type=int, default=24)
    sg.add_argument("--liveness-slots", type=int, default=72)
    sg.add_argument("--seconds", type=float, default=60.0)
    sg.add_argument("--ready-file")
    sg.add_argument("--out")
    rl = sub.add_parser("relay")
    rl.add_argument("--host", default="127.0.0.1")
    rl.add_argument("--port", type=int, required=True)
    rl.add_argument("--listen", type=int, required=True)
    rl.add_argument("--only", choices=["id", "forge", "replay-down", "replay-up"])
    rl.add_argument("--out")
    cs = sub.add_parser("check-secret")
    cs.add_argument("--capture", action="append", default=[])
    cs.add_argument("--secret-file", required=True)
    rp = sub.add_parser("report")
    rp.add_argument("--out", required=True)
    rp.add_argument("dirs", nargs="+")
    a = p.parse_args(argv)
    if a.cmd == "report":
        return report(a)
    if a.cmd == "sniff":
        sniff({int(x) for x in a.ports.split(",")}, a.out)
        return 0
    if a.cmd == "check-secret":
        return check_secret(a)
    if a.cmd == "siege":
        return siege(a)
    if a.cmd == "relay":
        return relay(a)
    attack(a)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

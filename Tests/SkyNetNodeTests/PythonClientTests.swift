import Foundation
@testable import SkyNetAuth
@testable import SkyNetNode
@testable import SkyNetRuntime
import SkyNetTestSupport
@testable import SkyNetWork
import Testing

/// docs/PROTOCOL.md is a contract for clients in any language: a Python client written from
/// that page alone (its "Handshake", "Encrypted links", "Tasks", "Files" and "Messages, ids and
/// replies"), on Debian's python3-cryptography, against a node in this process that has a
/// token. It does the version 2 Noise handshake, a `scan` and a `ping`, and a `transfer` whose
/// file goes up in `data`/`end` lines and whose returned file comes back checked by its SHA-256
/// (files version 1); asked with `--files 2`, it moves the file both ways as binary data
/// messages and `end`s without a digest (files version 2).
@Suite(.serialized, .timeLimit(.minutes(2)))
struct PythonClientTests {
    static let token = "a token for the Python client, from the document only"

    /// The client. The token comes from a file (or SKYNET_TOKEN), never from its arguments. It
    /// prints one JSON line of what it saw and exits 0, or a message on stderr and exits 1.
    static let client = #"""
    """A SkyNet protocol version 2 client written from docs/PROTOCOL.md alone."""
    import argparse, base64, hashlib, hmac, json, os, socket, sys, time, uuid
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
    from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
    from cryptography.hazmat.primitives import serialization

    MAX_MESSAGE = 1048576
    CHUNK = 262144
    BINARY_HEADER = 18  # 0x00, ID (8), FILE (1), OFFSET (8)


    class Failure(Exception):
        pass


    def sha256(b): return hashlib.sha256(b).digest()
    def mac(k, b): return hmac.new(k, b, hashlib.sha256).digest()


    def hkdf(ck, ikm, n):
        t = mac(ck, ikm); out = [mac(t, b"\x01")]
        while len(out) < n: out.append(mac(t, out[-1] + bytes([len(out) + 1])))
        return out


    def nonce(n): return b"\0\0\0\0" + n.to_bytes(8, "little")
    def raw(public): return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    def encode(obj): return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


    class Link:
        def __init__(self, port, token, timeout, name, files):
            self.timeout = timeout
            self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
            self.sock.settimeout(timeout)
            self.buffer = b""
            self.welcome = self.handshake(token, name, files)

        def recv_some(self):
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                raise Failure("timed out after %g s waiting for the node" % self.timeout)
            if not chunk:
                raise Failure("the node closed the connection")
            self.buffer += chunk

        def read_line(self):
            while b"\n" not in self.buffer:
                if len(self.buffer) > MAX_MESSAGE + 1:
                    raise Failure("a line over 1 MiB")
                self.recv_some()
            line, _, self.buffer = self.buffer.partition(b"\n")
            return json.loads(line.decode("utf-8"))

        def read_exact(self, n):
            while len(self.buffer) < n:
                self.recv_some()
            out, self.buffer = self.buffer[:n], self.buffer[n:]
            return out

        def handshake(self, token, name, files):
            psk = mac(mac(b"skynet token", token), b"noise psk\x01")
            h = ck = sha256(b"Noise_NNpsk0_25519_ChaChaPoly_SHA256")
            h = sha256(h + b"skynet 2")
            ck, t, k = hkdf(ck, psk, 3); h = sha256(h + t)
            e = X25519PrivateKey.generate(); e_pub = raw(e.public_key())
            h = sha256(h + e_pub); ck, k = hkdf(ck, e_pub, 2)
            hello = {"type": "hello", "version": 2, "name": name}
            if files != 1:
                hello["files"] = files  # said inside the handshake, as name is
            hello = encode(hello)
            c1 = ChaCha20Poly1305(k).encrypt(nonce(0), hello, h); h = sha256(h + c1)
            outer = {"type": "hello", "version": 2, "noise": base64.b64encode(e_pub + c1).decode("ascii")}
            self.sock.sendall(encode(outer) + b"\n")
            reply = self.read_line()
            if reply.get("type") != "handshake":
                raise Failure("the node answered the hello with %s" % json.dumps(reply))
            m2 = base64.b64decode(reply["noise"], validate=True)
            if len(m2) < 48:
                raise Failure("message 2 is too short")
            n_pub, c2 = m2[:32], m2[32:]
            h = sha256(h + n_pub); ck, k = hkdf(ck, n_pub, 2)
            shared = e.exchange(X25519PublicKey.from_public_bytes(n_pub))
            if shared == bytes(32):
                raise Failure("the node's key is of small order")
            ck, k = hkdf(ck, shared, 2)
            try:
                welcome = ChaCha20Poly1305(k).decrypt(nonce(0), c2, h)
            except Exception:
                raise Failure("the welcome does not open: the node lacks the token")
            self.send_key, self.receive_key = hkdf(ck, b"", 2)
            self.send_n = 0
            self.receive_n = 0
            welcome = json.loads(welcome.decode("utf-8"))
            if welcome.get("type") != "welcome":
                raise Failure("message 2 holds no welcome: %s" % json.dumps(welcome))
            return welcome

        def send(self, obj):
            self.send_message(encode(obj))

        def send_chunk(self, request_id, offset, chunk):
            """Files version 2: one chunk as a binary message (FILE 0xFF: a client's)."""
            if not 1 <= len(chunk) <= CHUNK:
                raise Failure("a chunk of %d bytes" % len(chunk))
            self.send_message(b"\x00" + request_id.to_bytes(8, "big") + b"\xff" + offset.to_bytes(8, "big") + chunk)

        def send_message(self, message):
            if len(message) > MAX_MESSAGE:
                raise Failure("a message over 1 MiB")
            sealed = ChaCha20Poly1305(self.send_key).encrypt(nonce(self.send_n), message, b"")
            self.send_n += 1
            self.sock.sendall(len(sealed).to_bytes(4, "big") + sealed)

        def receive(self):
            length = int.from_bytes(self.read_exact(4), "big")
            if length < 16 or length > MAX_MESSAGE + 16:
                raise Failure("a frame of %d bytes is out of bounds" % length)
            sealed = self.read_exact(length)
            try:
                message = ChaCha20Poly1305(self.receive_key).decrypt(nonce(self.receive_n), sealed, b"")
            except Exception:
                raise Failure("frame %d does not open" % self.receive_n)
            self.receive_n += 1
            if message[:1] == b"\x00":
                # Files version 2: 0x00 ‖ ID ‖ FILE ‖ OFFSET ‖ BYTES, read as a data message.
                if not BINARY_HEADER + 1 <= len(message) <= BINARY_HEADER + CHUNK:
                    raise Failure("a binary message of %d bytes" % len(message))
                return {"type": "data", "binary": True,
                        "id": int.from_bytes(message[1:9], "big"), "file": message[9],
                        "offset": int.from_bytes(message[10:18], "big"), "bytes": message[18:]}
            return json.loads(message.decode("utf-8"))

        def receive_for(self, request_id, deadline):
            """The next message for request_id; draining and other ids' lines are dropped."""
            while True:
                if time.monotonic() > deadline:
                    raise Failure("no reply to request %d in time" % request_id)
                message = self.receive()
                kind = message.get("type")
                if kind == "error" and "id" not in message:
                    raise Failure("error from the node: %s" % json.dumps(message))
                if message.get("id") == request_id:
                    return message
                if kind == "draining":
                    raise Failure("the node is draining")


    def final_failure(message):
        return Failure("%s %s: %s" % (message.get("type"), message.get("code"), message.get("message")))


    def main():
        parser = argparse.ArgumentParser()
        parser.add_argument("--port", type=int, required=True)
        parser.add_argument("--token-file", help="the token's file (else SKYNET_TOKEN)")
        parser.add_argument("--input-file", required=True, help="the file to transfer")
        parser.add_argument("--job", help="the job to transfer to (default: the welcome's only job other than scan)")
        parser.add_argument("--return-suffix", default=".out", help="returns = [the input's name + this]")
        parser.add_argument("--scan-input", type=int, default=7)
        parser.add_argument("--files", type=int, choices=[1, 2], default=1,
                            help="the file protocol version to ask for and require (2: binary chunks, no sha256)")
        parser.add_argument("--expect-same", action="store_true",
                            help="the job copies its input: the returned file must be the bytes sent")
        parser.add_argument("--timeout", type=float, default=10.0)
        args = parser.parse_args()

        if args.token_file:
            with open(args.token_file, "rb") as f:
                token = f.read()
            if token.endswith(b"\r\n"): token = token[:-2]
            elif token.endswith(b"\n"): token = token[:-1]
        else:
            token = os.environb.get(b"SKYNET_TOKEN", b"")
        if len(token) < 16:
            raise Failure("no token of 16 bytes or more (use --token-file or SKYNET_TOKEN)")

        with open(args.input_file, "rb") as f:
            content = f.read()
        input_name = os.path.basename(args.input_file)
        return_name = input_name + args.return_suffix

        link = Link(args.port, token, args.timeout, "pyclient", args.files)
        welcome = link.welcome
        if welcome.get("version") != 2:
            raise Failure("the welcome says version %r, not 2" % welcome.get("version"))
        if not isinstance(welcome.get("capacity"), int) or welcome["capacity"] < 1:
            raise Failure("the welcome's capacity is not a positive integer")
        files = welcome.get("files")
        if not isinstance(files, dict) or files.get("version") != args.files:
            raise Failure("the node offers no files version %d: %s" % (args.files, json.dumps(welcome)))
        if len(content) > files["max_file_size"]:
            raise Failure("the input is over the node's max_file_size")
        jobs = [name for name in welcome.get("jobs", {}) if name != "scan"]
        job = args.job
        if job is None:
            if len(jobs) != 1:
                raise Failure("the node declares jobs %r: say --job" % jobs)
            job = jobs[0]
        elif job not in jobs:
            raise Failure("the node has no job %r (its jobs: %r)" % (job, jobs))
        deadline = time.monotonic() + args.timeout

        # A scan and a ping, both in flight at once.
        scan_task = str(uuid.uuid4())
        link.send({"type": "scan", "id": 1, "task": {"id": scan_task, "input": args.scan_input, "duration": 0}})
        link.send({"type": "ping", "id": 2})
        scan_result = pong = None
        while scan_result is None or pong is None:
            if time.monotonic() > deadline:
                raise Failure("no reply to the scan or the ping in time")
            message = link.receive()
            kind = message.get("type")
            if kind == "error" and "id" not in message:
                raise Failure("error from the node: %s" % json.dumps(message))
            if message.get("id") == 1:
                if kind != "result":
                    raise final_failure(message)
                if message.get("task") != scan_task:
                    raise Failure("the scan's result names task %r" % message.get("task"))
                scan_result = message["result"]
            elif message.get("id") == 2:
                if kind != "pong":
                    raise final_failure(message)
                pong = message

        # A transfer: upload with data/end, then the returned file and the result.
        transfer_task = str(uuid.uuid4())
        st = os.stat(args.input_file)
        link.send({"type": "transfer", "id": 3, "job": job,
                   "task": {"id": transfer_task, "sector": 0, "input": input_name, "timeout": args.timeout},
                   "file": {"size": len(content), "mode": st.st_mode & 0o7777, "mtime_ns": st.st_mtime_ns},
                   "returns": [return_name], "max_return_size": 1 << 30, "cleanup": True})
        for offset in range(0, len(content), CHUNK):
            chunk = content[offset:offset + CHUNK]
            if args.files == 2:
                link.send_chunk(3, offset, chunk)
            else:
                link.send({"type": "data", "id": 3, "offset": offset, "data": base64.b64encode(chunk).decode("ascii")})
        if args.files == 2:
            link.send({"type": "end", "id": 3})
        else:
            link.send({"type": "end", "id": 3, "sha256": hashlib.sha256(content).hexdigest()})

        deadline = time.monotonic() + args.timeout
        returned = None
        received = b""
        chunks = []  # (offset, size, binary) of each returned chunk
        ended = False
        while True:
            message = link.receive_for(3, deadline)
            kind = message.get("type")
            if kind == "return":
                if message.get("file") != 0 or returned is not None:
                    raise Failure("a return not asked for: %s" % json.dumps(message))
                returned = message
            elif kind == "data":
                if returned is None or ended or message.get("file") != 0:
                    raise Failure("data not asked for")
                if message.get("offset") != len(received):
                    raise Failure("data at offset %r, %d expected" % (message.get("offset"), len(received)))
                binary = message.get("binary", False)
                if binary != (args.files == 2):
                    raise Failure("a %s data message on files version %d" % ("binary" if binary else "JSON", args.files))
                chunk = message["bytes"] if binary else base64.b64decode(message["data"], validate=True)
                chunks.append((message["offset"], len(chunk), binary))
                received += chunk
                if len(received) > returned["size"]:
                    raise Failure("more than the %d bytes announced" % returned["size"])
            elif kind == "end":
                if returned is None or ended or message.get("file") != 0:
                    raise Failure("an end not asked for")
                if len(received) != returned["size"]:
                    raise Failure("%d of %d bytes" % (len(received), returned["size"]))
                if args.files == 2:
                    if "sha256" in message:
                        raise Failure("an end with a sha256 on files version 2")
                elif hashlib.sha256(received).hexdigest() != message["sha256"].lower():
                    raise Failure("the returned file arrived altered")
                ended = True
            elif kind == "result":
                if not ended:
                    raise Failure("the result came before every returned file")
                if message.get("task") != transfer_task:
                    raise Failure("the transfer's result names task %r" % message.get("task"))
                transfer_result = message["result"]
                break
            else:
                raise final_failure(message)

        link.sock.close()
        if args.expect_same and received != content:
            raise Failure("the returned file is not the %d bytes sent (%d came back)" % (len(content), len(received)))
        print(json.dumps({
            "welcome": {"name": welcome.get("name"), "version": welcome.get("version"),
                        "jobs": welcome.get("jobs"), "files": files},
            "scan": scan_result,
            "pong": {"name": pong.get("name"), "capacity": pong.get("capacity"), "running": pong.get("running")},
            "job": job,
            "transfer": transfer_result,
            "returned": {"sha256": hashlib.sha256(received).hexdigest(), "size": len(received),
                         "mode": returned.get("mode"), "same": received == content,
                         "chunks": [{"offset": o, "size": n, "binary": b} for o, n, b in chunks]},
        }, sort_keys=True))
        return 0


    if __name__ == "__main__":
        try:
            sys.exit(main())
        except Failure as error:
            print("pyclient: %s" % error, file=sys.stderr)
            sys.exit(1)
        except (OSError, ValueError, KeyError, TypeError) as error:
            print("pyclient: %s: %s" % (type(error).__name__, error), file=sys.stderr)
            sys.exit(1)
    """#

    /// `text` and a newline, in a new file only its owner can read (made so, never widened).
    private func writePrivate(_ text: String, to path: String) throws {
        let descriptor = Glibc.open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        try #require(descriptor >= 0, "open \(path): \(String(cString: strerror(errno)))")
        defer { _ = Glibc.close(descriptor) }
        let bytes = Array((text + "\n").utf8)
        let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
        try #require(written == bytes.count, "write \(path): \(String(cString: strerror(errno)))")
    }

    /// Runs `body` with a node that requires `token` and declares the jobs `upper` (a file in,
    /// its upper-case copy left at `{}.out`) and `copy` (its exact copy there), its work root in
    /// a sandbox, its log collected.
    private func withNode<T>(_ body: (Node, LogLines) async throws -> T) async throws -> T {
        try await WorkDirSandbox.with { sandbox in
            var options = NodeHarness().options(token: Self.token)
            options.name = "py-node"
            options.workDir = sandbox.path
            try options.jobs.register("upper", CommandJob(name: "upper", command: try CommandTemplate("dd if={} of={}.out conv=ucase status=none")))
            try options.jobs.register("copy", CommandJob(name: "copy", command: try CommandTemplate("cp {} {}.out")))
            let log = LogLines()
            let node = try await Node.start(options, log: { log.append($0) })
            do {
                let result = try await body(node, log)
                await node.stop(grace: .seconds(1))
                #expect(!log.all.contains { $0.contains(Self.token) }, "the token was logged")
                return result
            } catch {
                await node.stop(grace: .seconds(1))
                throw error
            }
        }
    }

    /// Text of lower-case letters, digits, spaces and newlines: more than one 256 KiB chunk.
    private func input() -> [UInt8] {
        var random = SeededRandom(seed: 2_000_006)
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789 \n".utf8)
        return (0..<300_001).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] }
    }

    /// Runs the client against `node` with `content` as its input file and `options` (the job,
    /// the file protocol version), after the node's address, the token's file and the input;
    /// returns the one JSON line it printed, parsed.
    private func runClient(_ node: Node, content: [UInt8], named name: String, _ options: [String]) async throws -> [String: Any] {
        let directory = try TemporaryDirectory()
        let script = try directory.write(Array(Self.client.utf8), named: "skynet_client.py")
        let tokenFile = directory.path + "/token"
        try writePrivate(Self.token, to: tokenFile)
        let inputFile = try directory.write(content, named: name)
        let arguments = [script, "--port", "\(node.port)", "--token-file", tokenFile, "--input-file", inputFile,
                         "--timeout", "20"] + options
        #expect(!arguments.joined(separator: " ").contains(Self.token))
        // Debian's python3 and its python3-cryptography, whatever python3 comes first in PATH.
        let output = try await toolOutput("/usr/bin/python3", arguments)
        let lines = output.split(separator: "\n")
        try #require(lines.count == 1, "the client printed: \(output.prefix(2000))")
        return try #require(jsonFields(String(lines[0])), "not JSON: \(output.prefix(2000))")
    }

    @Test func aClientWrittenFromTheDocumentAloneScansPingsAndMovesAFile() async throws {
        let content = input()
        try await withNode { node, log in
            let seen = try await runClient(node, content: content, named: "text.txt", ["--job", "upper", "--scan-input", "7"])
            let welcome = try #require(seen["welcome"] as? [String: Any])
            #expect(welcome["version"] as? Int == 2)
            #expect(welcome["name"] as? String == "py-node")
            #expect((welcome["jobs"] as? [String: String])?["upper"] == "dd if={} of={}.out conv=ucase status=none")
            #expect((welcome["files"] as? [String: Any])?["version"] as? Int == 1)
            #expect(seen["scan"] as? String == "7")
            let pong = try #require(seen["pong"] as? [String: Any])
            #expect(pong["name"] as? String == "py-node")
            #expect(pong["capacity"] as? Int == 4)
            #expect(seen["job"] as? String == "upper")
            #expect(seen["transfer"] as? String == "", "dd writes nothing on stdout")
            let returned = try #require(seen["returned"] as? [String: Any])
            let upper = content.map { $0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z") ? $0 - 0x20 : $0 }
            #expect(returned["size"] as? Int == upper.count)
            #expect(returned["sha256"] as? String == Secrets.hex(SHA256.hash(upper)))
            #expect(returned["sha256"] as? String != Secrets.hex(SHA256.hash(content)), "the file came back unchanged")
            let chunks = try #require(returned["chunks"] as? [[String: Any]])
            #expect(chunks.count == 2 && chunks.allSatisfy { $0["binary"] as? Bool == false }, "\(chunks)")
            let connected = try await log.waitFor("[Node] Connected: pyclient from 127.0.0.1:")
            #expect(connected.count == 1 && connected.allSatisfy { $0.hasSuffix("(encrypted)") }, "\(log.all)")
            try await log.waitFor("[Node] Disconnected: pyclient from 127.0.0.1:")
            #expect(log.matching("Refused").isEmpty, "\(log.all)")
        }
    }

    /// Files version 2 from the document alone: the client asks for it (`"files":2` in the hello
    /// inside the handshake), finds it granted (the welcome's `files.version`), uploads 600,000
    /// bytes of every byte value as three binary messages (0x00, the id, FILE 0xFF, the offset,
    /// the bytes; the first chunk ends in 0x0A, the second starts with 0x00) and an `end`
    /// without `sha256`, and reads the copy the job made back as binary messages of FILE 0 at
    /// increasing offsets and an `end` without `sha256`, then the `result`. The bytes that come
    /// back are the bytes sent: nothing but the encrypted link checked them.
    @Test func aClientWrittenFromTheDocumentAloneMovesAFileWithFilesVersion2() async throws {
        var random = SeededRandom(seed: 2_000_007)
        var content = (0..<600_000).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        content[262_143] = 0x0A
        content[262_144] = 0x00
        try await withNode { node, log in
            let seen = try await runClient(node, content: content, named: "blob.bin", ["--job", "copy", "--files", "2", "--expect-same"])
            let welcome = try #require(seen["welcome"] as? [String: Any])
            #expect(welcome["version"] as? Int == 2)
            #expect((welcome["files"] as? [String: Any])?["version"] as? Int == 2, "\(welcome)")
            #expect(seen["job"] as? String == "copy")
            #expect(seen["transfer"] as? String == "", "cp writes nothing on stdout")
            let returned = try #require(seen["returned"] as? [String: Any])
            #expect(returned["same"] as? Bool == true)
            #expect(returned["size"] as? Int == content.count)
            #expect(returned["sha256"] as? String == Secrets.hex(SHA256.hash(content)))
            let chunks = try #require(returned["chunks"] as? [[String: Any]])
            #expect(chunks.map { $0["offset"] as? Int } == [0, 262_144, 524_288], "\(chunks)")
            #expect(chunks.allSatisfy { $0["binary"] as? Bool == true }, "\(chunks)")
            let connected = try await log.waitFor("[Node] Connected: pyclient from 127.0.0.1:")
            #expect(connected.count == 1 && connected.allSatisfy { $0.hasSuffix("(encrypted)") }, "\(log.all)")
            try await log.waitFor("[Node] Disconnected: pyclient from 127.0.0.1:")
            #expect(log.matching("Refused").isEmpty, "\(log.all)")
        }
    }

    /// With another token the same client fails: the node answers its hello `unauthorized`
    /// (the welcome never opens), and the client says so and exits non-zero.
    @Test func theClientFailsWithAMessageWhenItsTokenIsWrong() async throws {
        let directory = try TemporaryDirectory()
        let script = try directory.write(Array(Self.client.utf8), named: "skynet_client.py")
        let tokenFile = directory.path + "/token"
        try writePrivate("not the node's token, though long enough", to: tokenFile)
        let inputFile = try directory.write(Array("abc\n".utf8), named: "small.txt")
        try await withNode { node, log in
            let error = await #expect(throws: ToolError.self) {
                _ = try await toolOutput("/usr/bin/python3", [script, "--port", "\(node.port)", "--token-file", tokenFile,
                                                              "--input-file", inputFile, "--timeout", "20"])
            }
            #expect(error?.description.contains("unauthorized") == true, "\(error?.description ?? "")")
            try await log.waitFor("[Node] Refused 127.0.0.1:")
            #expect(log.matching("Connected:").isEmpty)
        }
    }
}

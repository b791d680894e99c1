import SkyNetRuntime
import SkyNetWork

/// What a node's `ping` reports.
package struct Pong: Sendable, Equatable {
    package var name: String
    package var running: Int
    package var capacity: Int
    package var completed: Int
    package var failed: Int
    /// Whether the node drains: it takes no new work; written only when true.
    package var draining: Bool
    /// The distributed actors the node hosts, by type; nil from a node that hosts none.
    package var actors: [String: Int]?

    package init(name: String, running: Int, capacity: Int, completed: Int, failed: Int, draining: Bool = false,
                 actors: [String: Int]? = nil) {
        self.name = name
        self.running = running
        self.capacity = capacity
        self.completed = completed
        self.failed = failed
        self.draining = draining
        self.actors = actors
    }
}

/// A message a node sends to a client (PROTOCOL.md).
package enum Reply: Sendable, Equatable {
    /// `jobs`: what each job the node runs does, by name (its command, or a label); nil from a
    /// node that does not say (protocol v1), which runs only the built-in scan.
    ///
    /// `idle`: the node's idle bound in seconds (it closes a client that sends nothing for that
    /// long while none of its scans runs); nil from a node that does not say.
    ///
    /// `files`: what the node offers for files; nil from a node that takes none.
    ///
    /// `actors`: the system of the distributed actors the node hosts; nil from one that hosts none.
    case welcome(version: Int, name: String, capacity: Int, queue: Int = 0, jobs: [String: String]?, idle: Double? = nil, files: FileSupport? = nil,
                 actors: ActorOffer? = nil)
    /// A node's answer to a hello with a Noise handshake: the handshake's second message, which
    /// carries the welcome. Every later message in both directions is an encrypted frame.
    case handshake(noise: [UInt8])
    case result(id: Int, task: UUID, result: String)
    case failure(id: Int, task: UUID, code: FailureCode, message: String)
    case pong(id: Int, Pong)
    case error(WireError)
    /// A file of a transfer's `returns` follows (`return`): its index, size, mode and time.
    case returnFile(ReturnHeader)
    /// Bytes of a returned file (`data` with `file`).
    case chunk(FileChunk)
    /// The end of a returned file, with its SHA-256 (`end` with `file`).
    case fileEnd(FileEnd)
    /// A `basefile` was stored.
    case stored(id: Int)
    /// The node drains: it takes no new work, and cancels what still runs after
    /// `timeout` seconds. Sent once, unsolicited, with no id.
    case draining(timeout: Double)
    /// A call's method returned `value` (nil: it returns nothing).
    case returned(id: Int, value: JSONValue?)
    /// A call's method threw: the error's type and description, as the node saw them.
    case threw(id: Int, type: String, message: String)
    /// A spawn made, or a lookup found, the actor `number` of the node's system `system`.
    case spawned(id: Int, system: String, number: Int)

    /// The request this reply ends, if any.
    package var requestID: Int? {
        switch self {
        case .welcome, .handshake, .returnFile, .chunk, .fileEnd, .draining: nil
        case .result(let id, _, _), .failure(let id, _, _, _), .pong(let id, _), .stored(let id),
             .returned(let id, _), .threw(let id, _, _), .spawned(let id, _, _): id
        case .error(let error): error.id
        }
    }

    /// The transfer a returned file's line belongs to (`return`, `data`, `end`): these lines
    /// stream into the pending request rather than end it.
    package var streamID: Int? {
        switch self {
        case .returnFile(let header): header.id
        case .chunk(let chunk): chunk.id
        case .fileEnd(let end): end.id
        case .welcome, .handshake, .result, .failure, .pong, .error, .stored, .draining, .returned, .threw, .spawned: nil
        }
    }

    /// The line to send.
    package var line: [UInt8] {
        switch self {
        case .welcome(let version, let name, let capacity, let queue, let jobs, let idle, let files, let actors):
            var json = JSONLine(type: "welcome")
            json.add("version", version)
            json.add("name", name)
            json.add("capacity", capacity)
            if queue > 0 { json.add("queue", queue) }
            if let jobs {
                var list = JSONLine()
                for (name, summary) in jobs.sorted(by: { $0.key < $1.key }) { list.add(name, summary) }
                json.add("jobs", object: list)
            }
            if let idle { json.add("idle", idle) }
            if let files {
                var offer = JSONLine()
                offer.add("version", files.version)
                offer.add("max_file_size", Int(files.maxFileSize))
                json.add("files", object: offer)
            }
            if let actors {
                var offer = JSONLine()
                offer.add("system", actors.system)
                offer.add("build", actors.build)
                json.add("actors", object: offer)
            }
            return json.takeLine()
        case .handshake(let noise):
            var json = JSONLine(type: "handshake")
            json.add("noise", String(decoding: Base64.encode(noise), as: UTF8.self))
            return json.takeLine()
        case .result(let id, let task, let result):
            return CanonicalLine.line(result: id, task: task, result: result)
        case .failure(let id, let task, let code, let message):
            var json = JSONLine(type: "failure", id: id)
            json.add("task", uuid: task)
            json.add("code", code.rawValue)
            json.add("message", message)
            return json.takeLine()
        case .pong(let id, let pong):
            var json = JSONLine(type: "pong", id: id)
            json.add("name", pong.name)
            json.add("running", pong.running)
            json.add("capacity", pong.capacity)
            json.add("completed", pong.completed)
            json.add("failed", pong.failed)
            if pong.draining { json.add("draining", true) }
            if let actors = pong.actors {
                var counts = JSONLine()
                for (type, count) in actors.sorted(by: { $0.key < $1.key }) { counts.add(type, count) }
                json.add("actors", object: counts)
            }
            return json.takeLine()
        case .error(let error):
            return error.line
        case .returnFile(let header): return header.line
        case .chunk(let chunk): return chunk.line
        case .fileEnd(let end): return end.line
        case .stored(let id): return JSONLine(type: "stored", id: id).line
        case .draining(let timeout):
            var json = JSONLine(type: "draining")
            // Whole seconds as an integer (`"timeout":30`), as an operator wrote them.
            if timeout == timeout.rounded(), abs(timeout) < 0x1p53 { json.add("timeout", Int(timeout)) } else { json.add("timeout", timeout) }
            return json.takeLine()
        case .returned(let id, let value):
            var json = JSONLine(type: "returned", id: id)
            if let value { json.add("value", value: value) }
            return json.takeLine()
        case .threw(let id, let type, let message):
            var json = JSONLine(type: "threw", id: id)
            json.add("error", type)
            json.add("message", message)
            return json.takeLine()
        case .spawned(let id, let system, let number):
            var actor = JSONLine()
            actor.add("system", system)
            actor.add("number", number)
            var json = JSONLine(type: "spawned", id: id)
            json.add("actor", object: actor)
            return json.takeLine()
        }
    }

    /// Decodes one line a node sent. Throws a `WireError` describing what was wrong with it.
    /// The largest idle bound a welcome is taken to say (a year): a client pings at a third of
    /// it, and a larger one (`1e21`) is no `Duration`.
    package static let maxIdleSeconds: Double = 365 * 86_400

    /// The most characters of a peer's message kept: it is printed with every re-run and every
    /// task given up.
    static let maxMessageCharacters = 1024

    static func cut(_ message: String) -> String {
        message.count > maxMessageCharacters ? String(message.prefix(maxMessageCharacters)) + "…" : message
    }

    package static func decode(_ line: Data) throws(WireError) -> Reply {
        if let result = CanonicalLine.result(line) { return result }
        if line.first == 0 { return .chunk(try FileChunk.decode(binary: line, inReply: true)) }
        if let chunk = CanonicalLine.chunk(line, inReply: true) { return .chunk(chunk) }
        if let returned = CanonicalLine.returned(line) { return returned }
        let fields = try WireFields(line)
        switch try fields.type() {
        case "welcome":
            return .welcome(version: try fields.int("version"), name: try fields.string("name"),
                            capacity: try fields.int("capacity", in: 0...Int.max),
                            queue: fields.fields["queue"] == nil || fields.fields["queue"] == .null ? 0 : try fields.int("queue", in: 0...Int.max),
                            jobs: try fields.jobs(),
                            idle: try fields.optionalNumber("idle").flatMap { $0.isFinite && $0 > 0 ? min($0, maxIdleSeconds) : nil },
                            files: try fields.fileSupport(), actors: try fields.actorOffer())
        case "handshake":
            guard let noise = try fields.noiseMessage(in: "handshake") else { throw .badRequest("a handshake needs \"noise\"") }
            return .handshake(noise: noise)
        case "result":
            return .result(id: try fields.requestID(), task: try fields.uuid("task"), result: try fields.string("result"))
        case "failure":
            return .failure(id: try fields.requestID(), task: try fields.uuid("task"),
                            code: FailureCode(rawValue: try fields.string("code")), message: cut(try fields.optionalString("message") ?? ""))
        case "pong":
            return .pong(id: try fields.requestID(), Pong(
                name: try fields.string("name"), running: try fields.int("running"), capacity: try fields.int("capacity"),
                completed: try fields.int("completed"), failed: try fields.int("failed"),
                draining: try fields.optionalBool("draining") ?? false, actors: try fields.actorCounts()))
        case "return":
            return .returnFile(try fields.returnHeader())
        case "data":
            return .chunk(try fields.fileChunk(inReply: true))
        case "end":
            return .fileEnd(try fields.fileEnd(inReply: true))
        case "stored":
            return .stored(id: try fields.requestID())
        case "draining":
            guard let timeout = try fields.optionalNumber("timeout"), timeout.isFinite, timeout >= 0 else {
                throw .badRequest("draining needs \"timeout\": a number of seconds, 0 or more")
            }
            return .draining(timeout: timeout)
        case "returned":
            // Absent: the method returns nothing; `null`: it returned nil.
            return .returned(id: try fields.requestID(), value: fields.fields["value"])
        case "threw":
            return .threw(id: try fields.requestID(), type: cut(try fields.string("error")), message: cut(try fields.optionalString("message") ?? ""))
        case "spawned":
            let actor = try fields.object("actor")
            let system = try actor.string("system")
            guard ActorSpawn.isName(system) else { throw .badRequest("\"actor.system\" must be 1 to \(ActorSpawn.maxNameBytes) bytes of printable text") }
            return .spawned(id: try fields.requestID(), system: system, number: try actor.int("number", in: 1...Int.max))
        case "error":
            return .error(WireError(code: FailureCode(rawValue: try fields.string("code")), message: try fields.optionalString("message").map(cut), id: fields.id))
        case let other:
            throw WireError(code: .unknownType, message: "unknown type \"\(cut(other))\"", id: fields.id)
        }
    }
}

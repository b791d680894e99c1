import SkyNetRuntime
import SkyNetWork

/// The protocol's current version. A node serves every version from 1 up to it; a client
/// without a token says 1 (so a node of version 1 serves it too), one with a token says
/// `WireAuth.encryptedVersion`.
package let wireVersion = 2

/// A message a client sends to a node (PROTOCOL.md).
package enum Request: Sendable, Equatable {
    /// `noise`: the first message of the Noise handshake of an encrypted link (version 2),
    /// which carries the hello that counts (`name` and `actors` stay out of the clear one).
    /// `actors`: the name of the client's own actor system, whose actors the node's may call
    /// back over this connection. `offersOldToken`: the hello offers a token as version 1 did
    /// (read, never written: our clients never send a token). `files`: the highest file
    /// version the client speaks (absent: 1), which the node grants only on a link that
    /// guarantees integrity (`FileSupport`).
    case hello(version: Int, name: String, noise: [UInt8]? = nil, actors: String? = nil, files: Int? = nil, offersOldToken: Bool = false)
    /// A task of the built-in scan (protocol v1; a deadline rides along as `task.timeout`).
    /// `wait`: seconds it may wait in line at a node whose slots are all taken, when the
    /// node's welcome offers a `queue` (absent: it is `busy` at once, as in v1).
    case scan(id: Int, task: ScanTask, wait: Double? = nil)
    /// A task of a named job other than `scan`. A v1 node answers `unknown-type`: it can never
    /// mistake it for a scan and run different work.
    case job(id: Int, task: ScanTask)
    case cancel(id: Int)
    case ping(id: Int)
    /// A task run in a work directory of its own, with its files. A v1 node answers
    /// `unknown-type`: it never runs the command on a file that is not there.
    case transfer(TransferRequest)
    /// A file stored for every later task of the connection.
    case basefile(BasefileRequest)
    /// Bytes of the file of a `transfer` or `basefile` (`data`).
    case chunk(FileChunk)
    /// The end of that file, with its SHA-256 (`end`).
    case fileEnd(FileEnd)
    /// A call of a distributed actor's method hosted by the node (`call`).
    case call(id: Int, ActorCall)
    /// Make an actor of a type the node's program declared (`spawn`).
    case spawn(id: Int, ActorSpawn)
    /// Find an actor the node hosts by the name it was spawned with (`lookup`).
    case lookup(id: Int, name: String, type: String? = nil)
    /// The client's answer (`returned`, `threw`, `error`) to a `call` the node sent it: a call
    /// of the client's own actors, made by the node's.
    case answer(Reply)

    /// The request that runs `task`: a `scan` for the built-in scan, else a `job`.
    package static func run(id: Int, task: ScanTask) -> Request {
        task.isScan ? .scan(id: id, task: task) : .job(id: id, task: task)
    }

    /// The most requests a node keeps in flight for one connection by default (past it,
    /// `busy`): a coordinator never has more on one link.
    package static let maxInFlightPerConnection = 1024

    /// The longest client name a hello may carry.
    package static let maxNameBytes = 128

    /// A control character (C0, DEL, C1: a C1 CSI starts a terminal escape as ESC [ does) or an
    /// invisible format character (a bidi override that reorders the log line around it, a
    /// zero-width space, a byte order mark): none belongs in a name that goes into a log.
    package static func isUnprintable(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.generalCategory == .control || scalar.properties.generalCategory == .format
    }

    /// The line to send.
    package var line: [UInt8] {
        switch self {
        case .hello(let version, let name, let noise, let actors, let files, _):
            var json = JSONLine(type: "hello")
            json.add("version", version)
            if !name.isEmpty { json.add("name", name) }
            if let noise { json.add("noise", String(decoding: Base64.encode(noise), as: UTF8.self)) }
            if let actors { json.add("actors", actors) }
            if let files { json.add("files", files) }
            return json.takeLine()
        case .scan(let id, let task, let wait):
            return CanonicalLine.line(scan: id, task: task, wait: wait)
        case .job(let id, let task):
            var body = JSONLine()
            body.add("id", uuid: task.id)
            body.add("sector", task.input)
            body.add("input", task.inputText)
            if let timeout = task.timeout { body.add("timeout", timeout) }
            var json = JSONLine(type: "job", id: id)
            json.add("job", task.job)
            json.add("task", object: body)
            return json.takeLine()
        case .cancel(let id):
            return JSONLine(type: "cancel", id: id).line
        case .ping(let id):
            return JSONLine(type: "ping", id: id).line
        case .transfer(let transfer): return transfer.line
        case .basefile(let basefile): return basefile.line
        case .chunk(let chunk): return chunk.line
        case .fileEnd(let end): return end.line
        case .call(let id, let call): return call.line(id: id)
        case .spawn(let id, let spawn): return spawn.line(id: id)
        case .lookup(let id, let name, let type):
            var json = JSONLine(type: "lookup", id: id)
            json.add("name", name)
            if let type { json.add("actor_type", type) }
            return json.takeLine()
        case .answer(let reply): return reply.line
        }
    }

    /// Decodes and validates one line. Throws the `WireError` to send back: `bad-request`
    /// (with the id when it could be read) or `unknown-type`.
    package static func decode(_ line: Data) throws(WireError) -> Request {
        if let scan = CanonicalLine.scan(line) { return scan }
        if line.first == 0 { return .chunk(try FileChunk.decode(binary: line, inReply: false)) }
        if let chunk = CanonicalLine.chunk(line, inReply: false) { return .chunk(chunk) }
        if let call = CanonicalLine.call(line) { return call }
        let fields = try WireFields(line)
        let id = fields.optionalInt("id")
        switch try fields.type() {
        case "hello":
            guard let version = fields.optionalInt("version") else {
                throw .badRequest("hello needs an integer \"version\"")
            }
            let name = try fields.optionalString("name") ?? ""
            // The name goes into the node's log lines: short, and no control character that
            // could start a forged line.
            guard name.utf8.count <= Self.maxNameBytes, !name.unicodeScalars.contains(where: Self.isUnprintable) else {
                throw .badRequest("hello \"name\" must be at most \(Self.maxNameBytes) bytes of printable text")
            }
            let actors = try fields.optionalString("actors")
            if let actors, !ActorSpawn.isName(actors) {
                throw .badRequest("hello \"actors\" must be 1 to \(ActorSpawn.maxNameBytes) bytes of printable text")
            }
            let noise = try fields.noiseMessage(in: "hello")
            if noise != nil, version < WireAuth.encryptedVersion {
                throw .badRequest("a hello with \"noise\" must say version \(WireAuth.encryptedVersion) or later")
            }
            let files = fields.fields["files"] == nil || fields.fields["files"] == .null ? nil : try fields.int("files", in: 1...Int.max)
            return .hello(version: version, name: name, noise: noise, actors: actors, files: files, offersOldToken: fields.offersOldToken)
        case "scan":
            let id = try fields.requestID()
            return .scan(id: id, task: try fields.task(id: id), wait: try fields.seconds("wait", id: id))
        case "job":
            let id = try fields.requestID()
            return .job(id: id, task: try fields.jobTask(id: id))
        case "cancel":
            return .cancel(id: try fields.requestID())
        case "ping":
            return .ping(id: try fields.requestID())
        case "transfer":
            return .transfer(try fields.transferRequest())
        case "basefile":
            return .basefile(try fields.basefileRequest())
        case "data":
            return .chunk(try fields.fileChunk(inReply: false))
        case "end":
            return .fileEnd(try fields.fileEnd(inReply: false))
        case "call":
            return .call(id: try fields.requestID(), try fields.actorCall())
        case "spawn":
            return .spawn(id: try fields.requestID(), try fields.actorSpawn())
        case "returned", "threw", "error":
            return .answer(try Reply.decode(line))
        case "lookup":
            let id = try fields.requestID()
            return .lookup(id: id, name: try fields.actorName(optional: false) ?? "", type: try fields.actorType(optional: true))
        case let other:
            // Quoted back cut short: a type near the line limit must not make a reply past it.
            throw WireError(code: .unknownType, message: "unknown type \"\(Reply.cut(other))\"", id: id)
        }
    }
}

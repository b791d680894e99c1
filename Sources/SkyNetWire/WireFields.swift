import SkyNetRuntime
import SkyNetWork

/// The fields of one received message, with typed accessors whose errors are the protocol's
/// `bad-request` replies, naming the field and carrying the request id when it was readable.
package struct WireFields {
    let fields: [String: JSONValue]
    /// The message's id, if it has an integer one: errors carry it.
    let id: Int?
    /// How errors name the fields of a nested object: `task.`.
    private var prefix = ""

    package init<Bytes: Collection<UInt8>>(_ line: Bytes) throws(WireError) {
        let value: JSONValue
        do {
            value = try JSONParser.parse(line)
        } catch {
            throw .badRequest("not valid JSON: \(error)")
        }
        guard case .object(let fields) = value else { throw .badRequest("a message is a JSON object") }
        self.fields = fields
        if case .int(let id) = fields["id"] { self.id = id } else { self.id = nil }
    }

    private init(object: [String: JSONValue], id: Int?, prefix: String) {
        self.fields = object
        self.id = id
        self.prefix = prefix
    }

    package func type() throws(WireError) -> String {
        guard case .string(let type) = fields["type"] else {
            throw .badRequest("missing string field \"type\"", id: id)
        }
        return type
    }

    /// The request's `id`: required, an integer. An id written any other way (`1e2`, `7.0`,
    /// `"7"`) is refused rather than read as a number: the reply echoes the id, and a client
    /// matches its replies by the id it wrote. The error carries no id, since there is none.
    func requestID() throws(WireError) -> Int {
        if let id { return id }
        switch fields["id"] {
        case nil, .null?: throw .badRequest("missing integer field \"id\"")
        case .outOfRange?: throw .badRequest("\"id\" is out of range (too large for a 64-bit float)")
        case .double(let number)? where number == number.rounded() && abs(number) >= 0x1p63:
            throw .badRequest("\"id\" is outside the range of a 64-bit integer")
        default: throw .badRequest("\"id\" must be a whole number (digits only, no fraction or exponent)")
        }
    }

    func optionalInt(_ key: String) -> Int? {
        if case .int(let value) = fields[key] { value } else { nil }
    }

    package func int(_ key: String, in range: ClosedRange<Int>? = nil) throws(WireError) -> Int {
        let value: Int
        switch fields[key] {
        case .int(let integer)?: value = integer
        case nil, .null?: throw .badRequest("missing integer field \"\(prefix)\(key)\"", id: id)
        case .outOfRange?: throw outOfRange(key)
        case .double(let number)? where number == number.rounded() && abs(number) >= 0x1p63:
            throw .badRequest("\"\(prefix)\(key)\" is outside the range of a 64-bit integer", id: id)
        default: throw .badRequest("\"\(prefix)\(key)\" must be a whole number (digits only, no fraction or exponent)", id: id)
        }
        if let range, !range.contains(value) {
            throw .badRequest("\"\(prefix)\(key)\" \(value) is outside \(range.lowerBound)...\(range.upperBound)", id: id)
        }
        return value
    }

    package func string(_ key: String) throws(WireError) -> String {
        guard case .string(let value) = fields[key] else { throw .badRequest("missing string field \"\(prefix)\(key)\"", id: id) }
        return value
    }

    package func optionalString(_ key: String) throws(WireError) -> String? {
        switch fields[key] {
        case nil, .null?: return nil
        case .string(let value)?: return value
        default: throw .badRequest("\"\(prefix)\(key)\" must be a string", id: id)
        }
    }

    /// A string field of exactly `count` bytes in hex (a nonce, a proof).
    func hexBytes(_ key: String, count: Int, in message: String) throws(WireError) -> [UInt8] {
        guard case .string(let text) = fields[key], text.utf8.count == 2 * count, let bytes = Secrets.bytes(fromHex: text) else {
            throw .badRequest("\(message) needs \"\(prefix)\(key)\": \(count) bytes in hex (\(2 * count) characters)", id: id)
        }
        return bytes
    }

    /// The Noise handshake message of a hello or a handshake reply (`noise`, base64); nil when
    /// there is none.
    func noiseMessage(in message: String) throws(WireError) -> [UInt8]? {
        guard let value = fields["noise"] else { return nil }
        guard case .string(let text) = value, text.utf8.count <= Base64.encodedCount(WireAuth.maxNoiseBytes),
              let bytes = Base64.decode(Array(text.utf8)), (WireAuth.minNoiseBytes...WireAuth.maxNoiseBytes).contains(bytes.count) else {
            throw .badRequest("\(message) \"noise\" must be base64 of \(WireAuth.minNoiseBytes) to \(WireAuth.maxNoiseBytes) bytes")
        }
        return bytes
    }

    /// Whether a hello offers a token as protocol version 1 did (`token` in plain text, or
    /// `auth` and `nonce`): a node with a token refuses it, naming the version it needs.
    var offersOldToken: Bool { fields["token"] != nil || fields["auth"] != nil || fields["nonce"] != nil }

    func uuid(_ key: String) throws(WireError) -> UUID {
        guard let uuid = UUID(wireText: try string(key)) else {
            throw .badRequest("\"\(prefix)\(key)\" is not a UUID", id: id)
        }
        return uuid
    }

    /// A number (integer or not) if present.
    package func optionalNumber(_ key: String) throws(WireError) -> Double? {
        switch fields[key] {
        case nil, .null?: return nil
        case .int(let value)?: return Double(value)
        case .double(let value)?: return value
        case .outOfRange?: throw outOfRange(key)
        default: throw .badRequest("\"\(prefix)\(key)\" must be a number", id: id)
        }
    }

    private func outOfRange(_ key: String) -> WireError {
        .badRequest("\"\(prefix)\(key)\" is out of range (too large for a 64-bit float)", id: id)
    }

    func object(_ key: String) throws(WireError) -> WireFields {
        guard case .object(let object) = fields[key] else { throw .badRequest("missing object field \"\(prefix)\(key)\"", id: id) }
        return WireFields(object: object, id: id, prefix: "\(prefix)\(key).")
    }

    /// The scan request's `task`, validated: a UUID id, an integer input, a duration in 0...3600.
    func task(id requestID: Int) throws(WireError) -> ScanTask {
        let task = try object("task")
        let taskID = try task.uuid("id")
        let input = try task.int("input")
        let duration = try task.optionalNumber("duration") ?? 1.0
        guard ScanTask.isValidDuration(duration) else {
            throw .badRequest("\"task.duration\" \(duration) is outside 0...\(Int(ScanTask.maxDuration)) seconds", id: requestID)
        }
        return ScanTask(id: taskID, input: input, duration: duration, timeout: try task.seconds("timeout", id: requestID))
    }

    /// The job request's job name and `task`, validated: a job name, a UUID id, an integer
    /// sector, an input text of at most `ScanTask.maxTextBytes`, an optional deadline.
    func jobTask(id requestID: Int) throws(WireError) -> ScanTask {
        let job = try string("job")
        do { try JobRegistry.validate(job) } catch { throw .badRequest("\"job\": \(error)", id: requestID) }
        guard job != JobRegistry.scan else {
            throw .badRequest("the built-in scan is asked for with a \"scan\" request", id: requestID)
        }
        let task = try object("task")
        let text = try task.string("input")
        guard text.utf8.count <= ScanTask.maxTextBytes else {
            throw .badRequest("\"task.input\" is longer than \(ScanTask.maxTextBytes) bytes", id: requestID)
        }
        return ScanTask(id: try task.uuid("id"), input: try task.int("sector"), duration: 0,
                        job: job, text: text, timeout: try task.seconds("timeout", id: requestID))
    }

    /// An optional bound in seconds (a task's `timeout`, a scan's `wait`): above 0 and at most a week.
    func seconds(_ key: String, id requestID: Int) throws(WireError) -> Double? {
        guard let seconds = try optionalNumber(key) else { return nil }
        guard ScanTask.isValidTimeout(seconds) else {
            throw .badRequest("\"\(prefix)\(key)\" \(seconds) is outside 0...\(Int(ScanTask.maxTimeout)) seconds (above 0)", id: requestID)
        }
        return seconds
    }

    /// A welcome's optional `jobs`: an object of job names and their summaries.
    func jobs() throws(WireError) -> [String: String]? {
        switch fields["jobs"] {
        case nil, .null?: return nil
        case .object(let object)?:
            guard object.count <= 4096 else { throw .badRequest("\"jobs\" names more than 4096 jobs", id: id) }
            var jobs: [String: String] = [:]
            for (name, value) in object {
                do { try JobRegistry.validate(name) } catch { throw .badRequest("\"jobs\": \(error)", id: id) }
                guard case .string(let summary) = value else { throw .badRequest("\"jobs.\(name)\" must be a string", id: id) }
                jobs[name] = summary
            }
            return jobs
        default: throw .badRequest("\"jobs\" must be an object", id: id)
        }
    }
}

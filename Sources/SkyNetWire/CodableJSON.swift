import SkyNetRuntime

/// `Codable` values as `JSONValue`s: what an actor call's arguments and result travel as.
///
/// The shape is the one Foundation's `JSONEncoder` gives with its default strategies (a keyed
/// container is an object, an unkeyed one an array, `nil` is `null`, `Data` a base64 string, a
/// `URL` its absolute string), so a client in another language reads and writes them as plain
/// JSON. Integers travel exactly or not at all: one outside `Int` is refused with the coding
/// path, as are NaN and the infinities.
package enum CodableJSON {
    /// The deepest a value may nest: with the message around it, the line stays within what
    /// `JSONParser` reads (and a recursive value cannot exhaust the stack).
    package static let maxDepth = 24

    package static func encode<Value: Encodable>(_ value: Value) throws -> JSONValue {
        // The commonest arguments and results, as their single-value containers write them,
        // without a tree of encoding nodes.
        switch value {
        case let number as Int: return .int(number)
        case let text as String: return .string(text)
        case let flag as Bool: return .bool(flag)
        case let number as Double: return try Leaf.floating(number, at: [])
        default: break
        }
        let root = EncodedNode()
        try Leaf.encode(value, into: root, at: [])
        return root.value
    }

    /// Decodes `type`; `userInfo` reaches every `init(from:)` (an actor system, for the actor
    /// references among the values).
    package static func decode<Value: Decodable>(_ type: Value.Type, from json: JSONValue,
                                                 userInfo: @autoclosure () -> [CodingUserInfoKey: any Sendable] = [:]) throws -> Value {
        // The commonest arguments and results, as their single-value containers read them,
        // without a decoder (or the `userInfo` no primitive reads).
        let primitive: Any? = switch type {
        case is Int.Type: try Read.integer(json, []) as Int
        case is String.Type: try Read.string(json, [])
        case is Bool.Type: try Read.bool(json, [])
        case is Double.Type: try Read.floating(json, []) as Double
        default: nil
        }
        if let primitive, let value = primitive as? Value { return value }
        return try Read.decode(type, json, [], userInfo())
    }
}

// MARK: - Encoding

/// One value being encoded: a leaf, or an object or array whose members are filled in as the
/// containers the value asked for are written (a reference, since containers are values).
private final class EncodedNode {
    var leaf: JSONValue?
    var members: [String: EncodedNode]?
    var elements: [EncodedNode]?

    var value: JSONValue {
        if let members { return .object(members.mapValues(\.value)) }
        if let elements { return .array(elements.map(\.value)) }
        return leaf ?? .object([:])  // a value that wrote nothing, as Foundation writes it
    }

    /// Makes this node an object (keeping members already written to it).
    func asObject() {
        if members == nil { (leaf, elements, members) = (nil, nil, [:]) }
    }

    func asArray() {
        if elements == nil { (leaf, members, elements) = (nil, nil, []) }
    }

    /// A new member `key` (replacing one written before).
    func member(_ key: String) -> EncodedNode {
        asObject()
        let node = EncodedNode()
        members?[key] = node
        return node
    }

    /// The member `key` a nested container writes into: the one already there, if any, so that
    /// two containers asked for one key write into one value.
    func nestedMember(_ key: String) -> EncodedNode {
        asObject()
        if let existing = members?[key] { return existing }
        return member(key)
    }

    func appended() -> EncodedNode {
        asArray()
        let node = EncodedNode()
        elements?.append(node)
        return node
    }
}

private struct ValueEncoder: Encoder {
    let node: EncodedNode
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        node.asObject()
        return KeyedEncodingContainer(KeyedEncoder(node: node, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        node.asArray()
        return UnkeyedEncoder(node: node, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleValueEncoder(node: node, codingPath: codingPath)
    }
}

/// The leaves: each kind of primitive as the wire writes it.
private enum Leaf {
    static func integer<Value: BinaryInteger>(_ value: Value, at path: [any CodingKey]) throws -> JSONValue {
        guard let exact = Int(exactly: value) else {
            throw EncodingError.invalidValue(value, .init(codingPath: path, debugDescription:
                "\(value) is outside the integers that travel exactly (\(Int.min)...\(Int.max))"))
        }
        return .int(exact)
    }

    static func floating<Value: BinaryFloatingPoint>(_ value: Value, at path: [any CodingKey]) throws -> JSONValue {
        guard value.isFinite else {
            throw EncodingError.invalidValue(value, .init(codingPath: path, debugDescription: "\(value) is not a JSON number"))
        }
        return .double(Double(value))
    }

    /// A value through its own `encode(to:)`, into `node`; `Data` and `URL` as Foundation's
    /// coders write them.
    static func encode<Value: Encodable>(_ value: Value, into node: EncodedNode, at path: [any CodingKey]) throws {
        guard path.count < CodableJSON.maxDepth else {
            throw EncodingError.invalidValue(value, .init(codingPath: path, debugDescription:
                "the value nests deeper than \(CodableJSON.maxDepth) levels"))
        }
        if let data = value as? Data {
            node.leaf = .string(String(decoding: Base64.encode(Array(data)), as: UTF8.self))
        } else if let url = value as? URL {
            node.leaf = .string(url.absoluteString)
        } else {
            try value.encode(to: ValueEncoder(node: node, codingPath: path))
        }
    }
}

private struct KeyedEncoder<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: EncodedNode
    let codingPath: [any CodingKey]

    private func set(_ value: JSONValue, _ key: Key) { node.member(key.stringValue).leaf = value }

    mutating func encodeNil(forKey key: Key) throws { set(.null, key) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { set(.bool(value), key) }
    mutating func encode(_ value: String, forKey key: Key) throws { set(.string(value), key) }
    mutating func encode(_ value: Double, forKey key: Key) throws { set(try Leaf.floating(value, at: codingPath + [key]), key) }
    mutating func encode(_ value: Float, forKey key: Key) throws { set(try Leaf.floating(value, at: codingPath + [key]), key) }
    mutating func encode(_ value: Int, forKey key: Key) throws { set(.int(value), key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { set(.int(Int(value)), key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { set(.int(Int(value)), key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { set(.int(Int(value)), key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { set(.int(Int(value)), key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { set(try Leaf.integer(value, at: codingPath + [key]), key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { set(.int(Int(value)), key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { set(.int(Int(value)), key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { set(.int(Int(value)), key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { set(try Leaf.integer(value, at: codingPath + [key]), key) }

    mutating func encode<Value: Encodable>(_ value: Value, forKey key: Key) throws {
        try Leaf.encode(value, into: node.member(key.stringValue), at: codingPath + [key])
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type,
                                                         forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        let child = node.nestedMember(key.stringValue)
        child.asObject()
        return KeyedEncodingContainer(KeyedEncoder<NestedKey>(node: child, codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let child = node.nestedMember(key.stringValue)
        child.asArray()
        return UnkeyedEncoder(node: child, codingPath: codingPath + [key])
    }

    mutating func superEncoder() -> any Encoder {
        ValueEncoder(node: node.member("super"), codingPath: codingPath + [AnyKey("super")])
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        ValueEncoder(node: node.member(key.stringValue), codingPath: codingPath + [key])
    }
}

private struct UnkeyedEncoder: UnkeyedEncodingContainer {
    let node: EncodedNode
    let codingPath: [any CodingKey]
    var count: Int { node.elements?.count ?? 0 }

    private var nextPath: [any CodingKey] { codingPath + [AnyKey(index: count)] }
    private func append(_ value: JSONValue) { node.appended().leaf = value }

    mutating func encodeNil() throws { append(.null) }
    mutating func encode(_ value: Bool) throws { append(.bool(value)) }
    mutating func encode(_ value: String) throws { append(.string(value)) }
    mutating func encode(_ value: Double) throws { append(try Leaf.floating(value, at: nextPath)) }
    mutating func encode(_ value: Float) throws { append(try Leaf.floating(value, at: nextPath)) }
    mutating func encode(_ value: Int) throws { append(.int(value)) }
    mutating func encode(_ value: Int8) throws { append(.int(Int(value))) }
    mutating func encode(_ value: Int16) throws { append(.int(Int(value))) }
    mutating func encode(_ value: Int32) throws { append(.int(Int(value))) }
    mutating func encode(_ value: Int64) throws { append(.int(Int(value))) }
    mutating func encode(_ value: UInt) throws { append(try Leaf.integer(value, at: nextPath)) }
    mutating func encode(_ value: UInt8) throws { append(.int(Int(value))) }
    mutating func encode(_ value: UInt16) throws { append(.int(Int(value))) }
    mutating func encode(_ value: UInt32) throws { append(.int(Int(value))) }
    mutating func encode(_ value: UInt64) throws { append(try Leaf.integer(value, at: nextPath)) }

    mutating func encode<Value: Encodable>(_ value: Value) throws {
        let path = nextPath
        try Leaf.encode(value, into: node.appended(), at: path)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let path = nextPath, child = node.appended()
        child.asObject()
        return KeyedEncodingContainer(KeyedEncoder<NestedKey>(node: child, codingPath: path))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let path = nextPath, child = node.appended()
        child.asArray()
        return UnkeyedEncoder(node: child, codingPath: path)
    }

    mutating func superEncoder() -> any Encoder {
        let path = nextPath
        return ValueEncoder(node: node.appended(), codingPath: path)
    }
}

private struct SingleValueEncoder: SingleValueEncodingContainer {
    let node: EncodedNode
    let codingPath: [any CodingKey]

    private func set(_ value: JSONValue) { (node.members, node.elements, node.leaf) = (nil, nil, value) }

    mutating func encodeNil() throws { set(.null) }
    mutating func encode(_ value: Bool) throws { set(.bool(value)) }
    mutating func encode(_ value: String) throws { set(.string(value)) }
    mutating func encode(_ value: Double) throws { set(try Leaf.floating(value, at: codingPath)) }
    mutating func encode(_ value: Float) throws { set(try Leaf.floating(value, at: codingPath)) }
    mutating func encode(_ value: Int) throws { set(.int(value)) }
    mutating func encode(_ value: Int8) throws { set(.int(Int(value))) }
    mutating func encode(_ value: Int16) throws { set(.int(Int(value))) }
    mutating func encode(_ value: Int32) throws { set(.int(Int(value))) }
    mutating func encode(_ value: Int64) throws { set(.int(Int(value))) }
    mutating func encode(_ value: UInt) throws { set(try Leaf.integer(value, at: codingPath)) }
    mutating func encode(_ value: UInt8) throws { set(.int(Int(value))) }
    mutating func encode(_ value: UInt16) throws { set(.int(Int(value))) }
    mutating func encode(_ value: UInt32) throws { set(.int(Int(value))) }
    mutating func encode(_ value: UInt64) throws { set(try Leaf.integer(value, at: codingPath)) }

    mutating func encode<Value: Encodable>(_ value: Value) throws {
        try Leaf.encode(value, into: node, at: codingPath)
    }
}

/// A key made at run time: an array index or `super`.
private struct AnyKey: CodingKey {
    let stringValue: String
    let intValue: Int?

    init(_ text: String) { (stringValue, intValue) = (text, nil) }
    init(index: Int) { (stringValue, intValue) = ("Index \(index)", index) }
    init?(stringValue: String) { self.init(stringValue) }
    init?(intValue: Int) { self.init(index: intValue) }
}

// MARK: - Decoding

private struct ValueDecoder: Decoder {
    let value: JSONValue
    let codingPath: [any CodingKey]
    let userInfo: [CodingUserInfoKey: Any]

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = value else { throw Read.mismatch([String: Any].self, value, codingPath) }
        return KeyedDecodingContainer(KeyedDecoder(members: members, codingPath: codingPath, userInfo: userInfo))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let elements) = value else { throw Read.mismatch([Any].self, value, codingPath) }
        return UnkeyedDecoder(elements: elements, codingPath: codingPath, userInfo: userInfo)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleValueDecoder(value: value, codingPath: codingPath, userInfo: userInfo)
    }
}

/// The leaves read back, each refused with its coding path when it is not what the type holds.
private enum Read {
    static func mismatch(_ type: Any.Type, _ value: JSONValue, _ path: [any CodingKey]) -> DecodingError {
        .typeMismatch(type, .init(codingPath: path, debugDescription: "expected \(type), found \(kind(of: value))"))
    }

    static func kind(of value: JSONValue) -> String {
        switch value {
        case .null: "null"
        case .bool: "a boolean"
        case .int, .double, .outOfRange: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    static func bool(_ value: JSONValue, _ path: [any CodingKey]) throws -> Bool {
        guard case .bool(let flag) = value else { throw mismatch(Bool.self, value, path) }
        return flag
    }

    static func string(_ value: JSONValue, _ path: [any CodingKey]) throws -> String {
        guard case .string(let text) = value else { throw mismatch(String.self, value, path) }
        return text
    }

    static func integer<Value: FixedWidthInteger>(_ value: JSONValue, _ path: [any CodingKey]) throws -> Value {
        let exact: Value? = switch value {
        case .int(let number): Value(exactly: number)
        // Only where a Double holds every integer: a larger one was rounded when it was parsed.
        case .double(let number) where abs(number) <= 0x1p53: Value(exactly: number)
        case .double, .outOfRange: nil
        default: throw mismatch(Value.self, value, path)
        }
        guard let exact else {
            throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "the number does not fit \(Value.self)"))
        }
        return exact
    }

    static func floating<Value: BinaryFloatingPoint>(_ value: JSONValue, _ path: [any CodingKey]) throws -> Value {
        let number: Value
        switch value {
        case .int(let integer): number = Value(integer)
        case .double(let double): number = Value(double)
        case .outOfRange:
            throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "the number is too large for \(Value.self)"))
        default: throw mismatch(Value.self, value, path)
        }
        guard number.isFinite else {  // a Double beyond a Float's range
            throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "the number is too large for \(Value.self)"))
        }
        return number
    }

    static func decode<Value: Decodable>(_ type: Value.Type, _ value: JSONValue, _ path: [any CodingKey],
                                        _ userInfo: [CodingUserInfoKey: Any]) throws -> Value {
        if type == Data.self {
            guard let bytes = Base64.decode(Array(try string(value, path).utf8)), let data = Data(bytes) as? Value else {
                throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "not base64"))
            }
            return data
        }
        if type == URL.self {
            guard let url = URL(string: try string(value, path)).flatMap({ $0 as? Value }) else {
                throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "not a URL"))
            }
            return url
        }
        return try Value(from: ValueDecoder(value: value, codingPath: path, userInfo: userInfo))
    }
}

private struct KeyedDecoder<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let members: [String: JSONValue]
    let codingPath: [any CodingKey]
    let userInfo: [CodingUserInfoKey: Any]

    var allKeys: [Key] { members.keys.compactMap(Key.init(stringValue:)) }
    func contains(_ key: Key) -> Bool { members[key.stringValue] != nil }

    private func value(_ key: Key) throws -> JSONValue {
        guard let value = members[key.stringValue] else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "no field \"\(key.stringValue)\""))
        }
        return value
    }

    func decodeNil(forKey key: Key) throws -> Bool { try value(key) == .null }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try Read.bool(value(key), codingPath + [key]) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try Read.string(value(key), codingPath + [key]) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try Read.floating(value(key), codingPath + [key]) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try Read.floating(value(key), codingPath + [key]) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try Read.integer(value(key), codingPath + [key]) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try Read.integer(value(key), codingPath + [key]) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try Read.integer(value(key), codingPath + [key]) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try Read.integer(value(key), codingPath + [key]) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try Read.integer(value(key), codingPath + [key]) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try Read.integer(value(key), codingPath + [key]) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try Read.integer(value(key), codingPath + [key]) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try Read.integer(value(key), codingPath + [key]) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try Read.integer(value(key), codingPath + [key]) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try Read.integer(value(key), codingPath + [key]) }

    func decode<Value: Decodable>(_ type: Value.Type, forKey key: Key) throws -> Value {
        try Read.decode(type, value(key), codingPath + [key], userInfo)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try ValueDecoder(value: value(key), codingPath: codingPath + [key], userInfo: userInfo).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try ValueDecoder(value: value(key), codingPath: codingPath + [key], userInfo: userInfo).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        ValueDecoder(value: members["super"] ?? .null, codingPath: codingPath + [AnyKey("super")], userInfo: userInfo)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        ValueDecoder(value: members[key.stringValue] ?? .null, codingPath: codingPath + [key], userInfo: userInfo)
    }
}

private struct UnkeyedDecoder: UnkeyedDecodingContainer {
    let elements: [JSONValue]
    let codingPath: [any CodingKey]
    let userInfo: [CodingUserInfoKey: Any]
    private(set) var currentIndex = 0

    init(elements: [JSONValue], codingPath: [any CodingKey], userInfo: [CodingUserInfoKey: Any]) {
        self.elements = elements
        self.codingPath = codingPath
        self.userInfo = userInfo
    }

    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    /// The next element and its path; the index moves on only once it was read as asked.
    private func next(_ type: Any.Type) throws -> (JSONValue, [any CodingKey]) {
        let path = codingPath + [AnyKey(index: currentIndex)]
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(type, .init(codingPath: path, debugDescription: "the array has no more elements"))
        }
        return (elements[currentIndex], path)
    }

    private mutating func read<Value>(_ type: Value.Type, _ convert: (JSONValue, [any CodingKey]) throws -> Value) throws -> Value {
        let (value, path) = try next(type)
        let result = try convert(value, path)
        currentIndex += 1
        return result
    }

    mutating func decodeNil() throws -> Bool {
        guard try next(Any?.self).0 == .null else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try read(type, Read.bool) }
    mutating func decode(_ type: String.Type) throws -> String { try read(type, Read.string) }
    mutating func decode(_ type: Double.Type) throws -> Double { try read(type, Read.floating) }
    mutating func decode(_ type: Float.Type) throws -> Float { try read(type, Read.floating) }
    mutating func decode(_ type: Int.Type) throws -> Int { try read(type, Read.integer) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try read(type, Read.integer) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try read(type, Read.integer) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try read(type, Read.integer) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try read(type, Read.integer) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try read(type, Read.integer) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try read(type, Read.integer) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try read(type, Read.integer) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try read(type, Read.integer) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try read(type, Read.integer) }

    mutating func decode<Value: Decodable>(_ type: Value.Type) throws -> Value {
        let userInfo = self.userInfo  // not self's: read(_:_:) mutates self
        return try read(type) { value, path in try Read.decode(type, value, path, userInfo) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        let userInfo = self.userInfo
        return try read(KeyedDecodingContainer<NestedKey>.self) { value, path in
            try ValueDecoder(value: value, codingPath: path, userInfo: userInfo).container(keyedBy: type)
        }
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let userInfo = self.userInfo
        return try read((any UnkeyedDecodingContainer).self) { value, path in
            try ValueDecoder(value: value, codingPath: path, userInfo: userInfo).unkeyedContainer()
        }
    }

    mutating func superDecoder() throws -> any Decoder {
        let userInfo = self.userInfo
        return try read((any Decoder).self) { value, path in ValueDecoder(value: value, codingPath: path, userInfo: userInfo) }
    }
}

private struct SingleValueDecoder: SingleValueDecodingContainer {
    let value: JSONValue
    let codingPath: [any CodingKey]
    let userInfo: [CodingUserInfoKey: Any]

    func decodeNil() -> Bool { value == .null }
    func decode(_ type: Bool.Type) throws -> Bool { try Read.bool(value, codingPath) }
    func decode(_ type: String.Type) throws -> String { try Read.string(value, codingPath) }
    func decode(_ type: Double.Type) throws -> Double { try Read.floating(value, codingPath) }
    func decode(_ type: Float.Type) throws -> Float { try Read.floating(value, codingPath) }
    func decode(_ type: Int.Type) throws -> Int { try Read.integer(value, codingPath) }
    func decode(_ type: Int8.Type) throws -> Int8 { try Read.integer(value, codingPath) }
    func decode(_ type: Int16.Type) throws -> Int16 { try Read.integer(value, codingPath) }
    func decode(_ type: Int32.Type) throws -> Int32 { try Read.integer(value, codingPath) }
    func decode(_ type: Int64.Type) throws -> Int64 { try Read.integer(value, codingPath) }
    func decode(_ type: UInt.Type) throws -> UInt { try Read.integer(value, codingPath) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try Read.integer(value, codingPath) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try Read.integer(value, codingPath) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try Read.integer(value, codingPath) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try Read.integer(value, codingPath) }

    func decode<Value: Decodable>(_ type: Value.Type) throws -> Value {
        try Read.decode(type, value, codingPath, userInfo)
    }
}

import Foundation
import Testing
@testable import SkyNetWire

/// Codable values to `JSONValue` and back: every shape the compiler synthesises, the same JSON
/// as Foundation's coders read and write, and a clear refusal (with the path) of what does not
/// travel exactly.
struct CodableJSONTests {
    enum Shape: Codable, Equatable {
        case point
        case circle(radius: Double)
        case polygon([Int8], closed: Bool)
    }

    struct Inner: Codable, Equatable {
        var name: String
        var tags: [String?]
    }

    struct Sample: Codable, Equatable {
        var int = Int.min
        var small = Int8.max
        var unsigned = UInt64(Int.max)
        var float: Float = 0.25
        var double = -1.5e-300
        var flag = true
        var text = "quote \" backslash \\ newline \n tab \t bell \u{7} é 🚀"
        var missing: Int?
        var present: Int? = 7
        var inner = Inner(name: "inner", tags: ["a", nil, ""])
        var shapes: [Shape] = [.point, .circle(radius: 2), .polygon([1, -2, 3], closed: false)]
        var byName = ["one": 1, "two": 2]
        var byNumber = [3: "three", 4: "four"]
        var nested = [[1, 2], [], [3]]
        var empty = [String: [Int]]()
        var data = Data([0, 1, 2, 250, 255])
        var url = URL(string: "https://example.com/a%20b?q=1")
        var date = Date(timeIntervalSinceReferenceDate: 12345.5)
    }

    class Base: Codable {
        var base = 1
        init() {}
    }

    final class Derived: Base {
        var own = "own"
        enum Keys: CodingKey { case own }
        override init() { super.init() }
        required init(from decoder: any Decoder) throws {
            own = try decoder.container(keyedBy: Keys.self).decode(String.self, forKey: .own)
            try super.init(from: decoder.container(keyedBy: Keys.self).superDecoder())
        }
        override func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(own, forKey: .own)
            try super.encode(to: container.superEncoder())
        }
    }

    @Test func everySynthesisedShapeComesBackEqual() throws {
        let value = Sample()
        let json = try CodableJSON.encode(value)
        #expect(try CodableJSON.decode(Sample.self, from: json) == value)
        // The text written is what the parser reads back.
        #expect(try JSONParser.parse(json.bytes) == json)
    }

    @Test func foundationReadsWhatWeWriteAndWeReadWhatItWrites() throws {
        let value = Sample()
        let ours = try CodableJSON.encode(value).bytes
        #expect(try JSONDecoder().decode(Sample.self, from: Data(ours)) == value)
        let theirs = try JSONEncoder().encode(value)
        #expect(try CodableJSON.decode(Sample.self, from: JSONParser.parse(theirs)) == value)
    }

    /// A primitive alone (most arguments and results) takes a shorter way: it must give what
    /// the containers give, optionals and refusals included.
    @Test func aPrimitiveAloneAndItsOptionalComeBackAsTheContainersGiveThem() throws {
        #expect(try CodableJSON.encode(4) == .int(4))
        #expect(try CodableJSON.encode(Int?.some(4)) == .int(4))
        #expect(try CodableJSON.encode(Int?.none) == .null)
        #expect(try CodableJSON.encode("x") == .string("x"))
        #expect(try CodableJSON.encode(true) == .bool(true))
        #expect(try CodableJSON.encode(0.5) == .double(0.5))
        #expect(throws: EncodingError.self) { try CodableJSON.encode(Double.nan) }
        #expect(try CodableJSON.decode(Int.self, from: .int(4)) == 4)
        #expect(try CodableJSON.decode(Int?.self, from: .int(4)) == 4)
        #expect(try CodableJSON.decode(Int?.self, from: .null) == nil)
        #expect(try CodableJSON.decode(String?.self, from: .string("a")) == "a")
        #expect(try CodableJSON.decode(Double.self, from: .int(3)) == 3)
        #expect(try CodableJSON.decode(Bool?.self, from: .null) == nil)
        #expect(throws: DecodingError.self) { try CodableJSON.decode(Int.self, from: .string("4")) }
        #expect(throws: DecodingError.self) { try CodableJSON.decode(Int.self, from: .null) }
        #expect(throws: DecodingError.self) { try CodableJSON.decode(String.self, from: .int(1)) }
    }

    @Test func dataIsBase64AndAURLItsStringAsFoundationWritesThem() throws {
        let json = try CodableJSON.encode(Sample())
        guard case .object(let fields) = json else {
            Issue.record("not an object: \(json)")
            return
        }
        #expect(fields["data"] == .string("AAEC+v8="))
        #expect(fields["url"] == .string("https://example.com/a%20b?q=1"))
        #expect(try CodableJSON.encode(Data("hi".utf8)) == .string("aGk="))
        #expect(throws: DecodingError.self) { try CodableJSON.decode(Data.self, from: .string("not base64!")) }
    }

    @Test func aSubclassKeepsItsSuperclassUnderSuper() throws {
        let value = Derived()
        value.base = 42
        let json = try CodableJSON.encode(value)
        #expect(json == .object(["own": .string("own"), "super": .object(["base": .int(42)])]))
        let back = try CodableJSON.decode(Derived.self, from: json)
        #expect(back.base == 42 && back.own == "own")
    }

    @Test func objectsAreWrittenWithSortedKeys() throws {
        #expect(String(decoding: JSONValue.object(["b": .int(1), "a": .array([.null, .bool(false)])]).bytes, as: UTF8.self)
                    == #"{"a":[null,false],"b":1}"#)
    }

    struct Wide: Codable { var values: [UInt64] }
    struct Real: Codable { var value: Double }
    struct Narrow: Codable { var values: [Int8] }
    struct Named: Codable { var name: String }

    @Test func whatDoesNotTravelExactlyIsRefusedWithItsPath() throws {
        #expect(throws: EncodingError.self) { try CodableJSON.encode(Wide(values: [1, .max])) }
        do {
            _ = try CodableJSON.encode(Wide(values: [1, .max]))
        } catch EncodingError.invalidValue(_, let context) {
            #expect(context.codingPath.map(\.stringValue) == ["values", "Index 1"])
        }
        #expect(throws: EncodingError.self) { try CodableJSON.encode(Real(value: .nan)) }
        #expect(throws: EncodingError.self) { try CodableJSON.encode(Real(value: -.infinity)) }
    }

    final class Chain: Codable {
        var next: Chain?
        init(length: Int) { next = length > 1 ? Chain(length: length - 1) : nil }
    }

    @Test func aValueNestedTooDeeplyIsRefusedNotWritten() throws {
        #expect(throws: Never.self) { try CodableJSON.encode(Chain(length: CodableJSON.maxDepth)) }
        #expect(throws: EncodingError.self) { try CodableJSON.encode(Chain(length: CodableJSON.maxDepth + 1)) }
        #expect(throws: EncodingError.self) { try CodableJSON.encode(Chain(length: 2000)) }  // stops at the limit
    }

    /// Numbers that a Double only rounds, or that do not fit the type, are refused.
    @Test func numbersAreTakenOnlyWhenExact() throws {
        let huge = try JSONParser.parse(Array("[9223372036854775809]".utf8))
        #expect(throws: DecodingError.self) { try CodableJSON.decode([UInt64].self, from: huge) }
        #expect(throws: DecodingError.self) { try CodableJSON.decode(Float.self, from: .double(1e300)) }
        #expect(try CodableJSON.decode(Float.self, from: .double(0.5)) == 0.5)
        #expect(try CodableJSON.decode(Int.self, from: .double(0x1p53)) == 1 << 53)
    }

    struct TwoContainers: Encodable {
        enum Keys: CodingKey { case box, a, b }
        func encode(to encoder: any Encoder) throws {
            var outer = encoder.container(keyedBy: Keys.self)
            var first = outer.nestedContainer(keyedBy: Keys.self, forKey: .box)
            try first.encode(1, forKey: .a)
            var second = outer.nestedContainer(keyedBy: Keys.self, forKey: .box)
            try second.encode(2, forKey: .b)
        }
    }

    @Test func twoNestedContainersForOneKeyWriteIntoOneValue() throws {
        #expect(try CodableJSON.encode(TwoContainers()) == .object(["box": .object(["a": .int(1), "b": .int(2)])]))
    }

    @Test func aValueOfTheWrongKindIsRefusedWithItsPath() throws {
        func failure<T: Decodable>(_ type: T.Type, _ json: JSONValue) -> DecodingError? {
            do {
                _ = try CodableJSON.decode(type, from: json)
                return nil
            } catch {
                return error as? DecodingError
            }
        }
        guard case .dataCorrupted(let range)? = failure(Narrow.self, .object(["values": .array([.int(1), .int(300)])])) else {
            Issue.record("300 was read as an Int8")
            return
        }
        #expect(range.codingPath.map(\.stringValue) == ["values", "Index 1"])
        guard case .typeMismatch(_, let kind)? = failure(Named.self, .object(["name": .int(5)])) else {
            Issue.record("a number was read as a String")
            return
        }
        #expect(kind.codingPath.map(\.stringValue) == ["name"] && kind.debugDescription.contains("found a number"))
        guard case .keyNotFound(let key, _)? = failure(Named.self, .object([:])) else {
            Issue.record("a missing field was not refused")
            return
        }
        #expect(key.stringValue == "name")
        #expect(throws: DecodingError.self) { try CodableJSON.decode(Int.self, from: .double(1.5)) }
        #expect(try CodableJSON.decode(Int.self, from: .double(2)) == 2)  // integral, as other writers may spell it
    }
}

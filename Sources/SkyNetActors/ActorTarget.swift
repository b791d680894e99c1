import SkyNetWire

/// Which methods a call may name. A target is the mangled name of a distributed thunk, and the
/// runtime runs the thunk it names on the actor it is given without checking that the actor is
/// of the thunk's type. The host checks the mangled text itself, then that it is the name of a
/// thunk compiled into this program: the runtime demangles a target's signature to learn its
/// arguments, and its demangler is not built for hostile input (a made-up signature after a
/// real type and method name crashes it), so nothing but a compiler's own name reaches it.
enum ActorTarget {
    /// The name of the distributed method of `type` that `target` names, when it is one
    /// declared in `type` itself: `$s`, the type's mangled name, the method's name as one plain
    /// identifier, a signature that does not start as a nested type's would, and the
    /// distributed thunk's `TE`; nil for anything else.
    ///
    /// What this leaves out is refused as an unknown target: methods of generic actors, of
    /// private types, and names the compiler writes with word substitutions (a name that
    /// repeats a word of its type's).
    static func method(_ target: String, of type: Any.Type) -> String? {
        guard let typeName = _mangledTypeName(type) else { return nil }
        let bytes = Array(target.utf8), prefix = Array(("$s" + typeName).utf8)
        guard bytes.count <= ActorCall.maxTargetBytes, bytes.starts(with: prefix), bytes.suffix(2) == Array("TE".utf8),
              bytes.allSatisfy(isMangledText) else { return nil }
        // The method's name: a length (no leading zero, which would start word substitutions)
        // and that many characters.
        var index = prefix.count, length = 0
        while index < bytes.count, let digit = digit(bytes[index]), length < 1000 {
            guard length > 0 || digit > 0 else { return nil }
            length = length * 10 + digit
            index += 1
        }
        guard length > 0, index + length < bytes.count - 2 else { return nil }
        let name = String(decoding: bytes[index..<(index + length)], as: UTF8.self)
        index += length
        // A nested type's name would be followed by its kind: class, struct, enum, protocol.
        guard !"CVOP".utf8.contains(bytes[index]) else { return nil }
        return isCompiledThunk(bytes) ? name : nil
    }

    /// Whether `name` is, byte for byte, the name of a distributed thunk in this program's
    /// table of accessible functions: the runtime's lookup compares names and demangles nothing.
    private static func isCompiledThunk(_ name: [UInt8]) -> Bool {
        name.withUnsafeBufferPointer { buffer in
            buffer.baseAddress.map { findAccessibleFunction($0, UInt(buffer.count)) != nil } ?? false
        }
    }

    private static func digit(_ byte: UInt8) -> Int? {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) ? Int(byte - UInt8(ascii: "0")) : nil
    }

    /// The characters of a mangled Swift name of ASCII identifiers.
    private static func isMangledText(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "$"): true
        default: false
        }
    }
}

/// The Swift runtime's lookup of an accessible function (a distributed thunk) by its exact
/// name, the one `executeDistributedTarget` starts with: a table search, no demangling.
@_silgen_name("swift_findAccessibleFunction")
private func findAccessibleFunction(_ name: UnsafePointer<UInt8>, _ length: UInt) -> UnsafeRawPointer?

import SkyNetRuntime

/// Which methods a call may name. A target is the mangled name of a distributed thunk, and the
/// runtime runs the thunk it names on the actor it is given without checking that the actor is
/// of the thunk's type: the host checks that first, from the demangled name, never by looking
/// a type up from what the wire says.
enum ActorTarget {
    /// The longest target taken (real ones are well under 300 bytes).
    static let maxBytes = 1024

    /// Whether `target` is a distributed method declared in `type` itself (not in a type nested
    /// in it, not in an extension in another module).
    static func isMethod(_ target: String, of type: Any.Type) -> Bool {
        guard let demangled = demangle(target) else { return false }
        let prefix = "distributed thunk " + _typeName(type, qualified: true) + "."
        guard demangled.hasPrefix(prefix) else { return false }
        // The method's own name follows, up to its parameter list: a dot there is a nested type.
        let rest = demangled.dropFirst(prefix.count)
        guard let open = rest.firstIndex(of: "(") else { return false }
        return !rest[..<open].contains(".") && !rest[..<open].isEmpty
    }

    /// The runtime's demangling of `symbol`, or nil if it is none (or too long to try).
    static func demangle(_ symbol: String) -> String? {
        guard symbol.utf8.count <= maxBytes, symbol.hasPrefix("$s") else { return nil }
        return symbol.withCString { name in
            guard let text = swiftDemangle(name, UInt(strlen(name)), nil, nil, 0) else { return nil }
            defer { free(text) }
            return String(cString: text)
        }
    }
}

/// The Swift runtime's demangler (exported by libswiftCore; no module declares it): returns a
/// malloc'd string, or nil when the input is not a mangled name.
@_silgen_name("swift_demangle")
private func swiftDemangle(_ mangled: UnsafePointer<CChar>, _ length: UInt, _ output: UnsafeMutablePointer<CChar>?,
                           _ outputLength: UnsafeMutablePointer<UInt>?, _ flags: UInt32) -> UnsafeMutablePointer<CChar>?

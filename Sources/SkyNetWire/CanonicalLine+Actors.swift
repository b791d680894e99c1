import SkyNetRuntime

extension CanonicalLine {
    /// `{"type":"call","id":N,"actor":{"system":"S","number":N},"target":"T","arguments":[…]}`
    /// (no type arguments): every call of a distributed method that is not generic. Only the
    /// arguments go through the general parser; a line that is not exactly this form, or does
    /// not pass the checks the general decoder makes, returns nil and goes the long way.
    ///
    /// Safe as the chunk's path, without encoding the line again to compare: the form is
    /// fixed (no key twice, no other order), its integers and strings read back as the general
    /// decoder reads them (JSON's grammar, no escapes), the arguments and the value are read
    /// by the general parser at the depth they sit at, and the checks are the general decoder's.
    static func call(_ line: Data) -> Request? {
        exact(line) { reader -> Request? in
            guard reader.literal(#"{"type":"call","id":"#), let id = reader.integer(),
                  reader.literal(#","actor":{"system":"#), let system = reader.plainString(), ActorSpawn.isName(system),
                  reader.literal(#","number":"#), let number = reader.integer(), number >= 1,
                  reader.literal(#"},"target":"#), let target = reader.plainString(),
                  !target.isEmpty, target.utf8.count <= ActorCall.maxTargetBytes,
                  reader.literal(#","arguments":"#), case .array(let arguments)? = reader.value(before: "}"),
                  arguments.count <= ActorCall.maxArguments
            else { return nil }
            return .call(id: id, ActorCall(system: system, number: number, target: target, arguments: arguments))
        }
    }

    /// `{"type":"returned","id":N}` or `{"type":"returned","id":N,"value":V}`: the answer to
    /// nearly every call.
    static func returned(_ line: Data) -> Reply? {
        exact(line) { reader -> Reply? in
            guard reader.literal(#"{"type":"returned","id":"#), let id = reader.integer() else { return nil }
            var value: JSONValue?
            if reader.literal(#","value":"#) {
                guard let read = reader.value(before: "}") else { return nil }
                value = read
            } else {
                guard reader.literal("}"), reader.atEnd else { return nil }
            }
            return .returned(id: id, value: value)
        }
    }
}

extension DirectoryHandle {
    /// The names in this directory (not `.` and `..`) for which `matches` holds, read with
    /// `readdir` through a duplicate of the handle's descriptor (the handle's own offset stays).
    /// Names that are not UTF-8 are skipped. At most `limit` names (a directory may be huge).
    public func names(limit: Int = 10_000, where matches: (String) -> Bool) -> [String] {
        let fd = dup(descriptor)
        guard fd >= 0 else { return [] }
        // fdopendir owns the duplicate from here: closedir closes it.
        guard let stream = fdopendir(fd) else {
            _ = closeDescriptor(fd)
            return []
        }
        defer { closedir(stream) }
        rewinddir(stream)
        var found: [String] = []
        while found.count < limit, let entry = readdir(stream) {
            let bytes = withUnsafeBytes(of: entry.pointee.d_name) { raw in Array(raw.prefix { $0 != 0 }) }
            guard let name = String(validating: bytes, as: UTF8.self), name != ".", name != ".." else { continue }
            if matches(name) { found.append(name) }
        }
        return found
    }
}

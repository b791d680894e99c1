/// The name of an entry `readdir` returned, as bytes (no NUL), read through the entry's
/// pointer. Loading `entry.pointee.d_name` would copy the field's full 256 bytes, but the
/// kernel packs entries by the length of their names: the last one in the buffer can end just
/// before memory that is not mapped, and that copy then faults (a node's start-up sweep died
/// so once, in libc's memcpy).
package func directoryEntryName(_ entry: UnsafePointer<dirent>) -> [UInt8] {
    let start = UnsafeRawPointer(entry) + directoryEntryNameOffset
    return Array(UnsafeRawBufferPointer(start: start, count: strlen(start.assumingMemoryBound(to: CChar.self))))
}

/// Where `d_name` lies in a `dirent` (glibc's layout: after the inode, offset, length and type).
private let directoryEntryNameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name) ?? 19

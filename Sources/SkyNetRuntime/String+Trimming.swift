extension StringProtocol {
    /// Without the characters at either end that `trimmed` matches: `trimming(\.isWhitespace)`.
    package func trimming(_ trimmed: (Character) -> Bool) -> String {
        String(drop(while: trimmed).reversed().drop(while: trimmed).reversed())
    }
}

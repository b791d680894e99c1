import SkyNetRuntime
import SkyNetWork

extension ReturnedFile {
    /// `{"path":"photos/a.png","size":4194304,"sha256":"<64 hex>"}`: a returned file in a
    /// `--json` event and a journal line.
    package var json: JSONLine {
        var json = JSONLine()
        json.add("path", path)
        json.add("size", Int(size))
        json.add("sha256", Secrets.hex(sha256))
        return json
    }
}

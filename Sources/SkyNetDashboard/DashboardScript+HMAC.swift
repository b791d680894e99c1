/// JavaScript the dashboard page includes beside its own script (`DashboardPage.script`).
enum DashboardScript {
    /// SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104) in plain ES2017, for the dashboard's
    /// login: the page proves it knows the token without sending it. It is served over plain
    /// http on any address, which is not a secure context, so `crypto.subtle` is missing and
    /// the page brings its own.
    ///
    /// Defines four globals and nothing else: `skynetSHA256(bytes)`, `skynetHMAC(key, message)`
    /// (Uint8Array in, Uint8Array(32) out), `skynetHex(bytes)`, and
    /// `skynetDashboardProof(token, nonceHex)`: the lowercase hex of HMAC-SHA256(key: the
    /// token's UTF-8, message: the UTF-8 of "skynet dashboard proof\n" + nonceHex), where
    /// nonceHex is the server's 64 lowercase hex digits. Bad arguments throw a `TypeError`.
    ///
    /// Safe under `'use strict'`; holds no `</script>`, so it can be inlined. Any input length
    /// is hashed (the bit length's high word is computed by division, not by shifts, which
    /// would cut it to 32 bits); inputs over 2^29 bytes are not tested. It hashes in one go
    /// (no streaming) and allocates a padded copy of the input: fine for a token and a nonce.
    static let hmac: String = #"""
    // SHA-256 of a Uint8Array, as a Uint8Array(32) (FIPS 180-4 §6.2).
    function skynetSHA256(bytes) {
      if (!(bytes instanceof Uint8Array)) throw new TypeError('skynetSHA256 needs a Uint8Array');
      // §4.2.2: the first 32 bits of the fractional parts of the cube roots of the first
      // 64 primes. Kept inside the function so that the script adds no other global.
      const K = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
      ];
      // JavaScript's bitwise operators work on 32-bit integers, which is what SHA-256 needs;
      // sums are cut back to 32 bits with `| 0` (below 2^53 every sum is exact first).
      const rotr = (x, n) => (x >>> n) | (x << (32 - n));

      // Padding (§5.1.1): 0x80, zeros up to 56 mod 64, then the length in bits as 64 bits,
      // big-endian. `* 8` and a division rather than `<< 3`: shifts would cut the length to
      // 32 bits.
      const length = bytes.length;
      const padded = new Uint8Array(Math.ceil((length + 9) / 64) * 64);
      padded.set(bytes);
      padded[length] = 0x80;
      const view = new DataView(padded.buffer);
      view.setUint32(padded.length - 8, Math.floor(length / 0x20000000));
      view.setUint32(padded.length - 4, (length * 8) >>> 0);

      // §5.3.3: the first 32 bits of the fractional parts of the square roots of the first
      // 8 primes.
      const H = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];
      const W = new Uint32Array(64);  // the message schedule; stores wrap modulo 2^32
      for (let block = 0; block < padded.length; block += 64) {
        for (let t = 0; t < 16; t++) W[t] = view.getUint32(block + 4 * t);
        for (let t = 16; t < 64; t++) {
          const s0 = rotr(W[t - 15], 7) ^ rotr(W[t - 15], 18) ^ (W[t - 15] >>> 3);
          const s1 = rotr(W[t - 2], 17) ^ rotr(W[t - 2], 19) ^ (W[t - 2] >>> 10);
          W[t] = (W[t - 16] + s0 + W[t - 7] + s1) | 0;
        }
        let [a, b, c, d, e, f, g, h] = H;
        for (let t = 0; t < 64; t++) {
          const S1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
          const choice = (e & f) ^ (~e & g);
          const t1 = (h + S1 + choice + K[t] + W[t]) | 0;
          const S0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
          const majority = (a & b) ^ (a & c) ^ (b & c);
          const t2 = (S0 + majority) | 0;
          h = g; g = f; f = e; e = (d + t1) | 0;
          d = c; c = b; b = a; a = (t1 + t2) | 0;
        }
        H[0] = (H[0] + a) | 0; H[1] = (H[1] + b) | 0; H[2] = (H[2] + c) | 0; H[3] = (H[3] + d) | 0;
        H[4] = (H[4] + e) | 0; H[5] = (H[5] + f) | 0; H[6] = (H[6] + g) | 0; H[7] = (H[7] + h) | 0;
      }
      const digest = new Uint8Array(32);
      const out = new DataView(digest.buffer);
      for (let i = 0; i < 8; i++) out.setUint32(4 * i, H[i] >>> 0);
      return digest;
    }

    // HMAC-SHA256 (RFC 2104) of two Uint8Arrays, as a Uint8Array(32).
    function skynetHMAC(key, message) {
      if (!(key instanceof Uint8Array) || !(message instanceof Uint8Array)) {
        throw new TypeError('skynetHMAC needs two Uint8Arrays');
      }
      // §2: a key longer than the 64-byte block is hashed first; a shorter one is padded
      // with zeros.
      if (key.length > 64) key = skynetSHA256(key);
      const inner = new Uint8Array(64 + message.length);
      const outer = new Uint8Array(64 + 32);
      for (let i = 0; i < 64; i++) {
        const byte = i < key.length ? key[i] : 0;
        inner[i] = byte ^ 0x36;
        outer[i] = byte ^ 0x5c;
      }
      inner.set(message, 64);
      outer.set(skynetSHA256(inner), 64);
      const tag = skynetSHA256(outer);
      // The pads hold the key: wipe them rather than leave it to the garbage collector.
      inner.fill(0);
      outer.fill(0);
      return tag;
    }

    // Lowercase hex of a Uint8Array.
    function skynetHex(bytes) {
      return Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('');
    }

    // The answer to the server's login challenge: the token never leaves the page, only a tag
    // bound to the server's fresh nonce (which the server hands out once and checks itself).
    function skynetDashboardProof(token, nonceHex) {
      if (typeof token !== 'string') throw new TypeError('the token must be a string');
      if (typeof nonceHex !== 'string' || !/^[0-9a-f]{64}$/.test(nonceHex)) {
        throw new TypeError('the nonce must be 64 lowercase hex digits');
      }
      const utf8 = new TextEncoder();
      return skynetHex(skynetHMAC(utf8.encode(token), utf8.encode('skynet dashboard proof\n' + nonceHex)));
    }
    """#
}

/// Removes the user information (`user:password@`) of every URL in a text: camera sources are often
/// `rtsp://admin:secret@192.0.2.10/stream`, and FFmpeg repeats the URL in its errors. What the API shows of a source
/// (`GET /v1/cameras`, the status page) goes through this.
public enum UserinfoRedaction {
    /// `text` with `scheme://userinfo@` turned into `scheme://`. The user information runs to the last `@` before the
    /// authority ends (`/`, `?`, `#` or white space), so a password with an unencoded `@` is removed whole.
    public static func redacted(_ text: String) -> String {
        text.replacing(/(?<scheme>[A-Za-z][A-Za-z0-9+.\-]*:\/\/)[^\/?#\s]*@/) { match in match.output.scheme }
    }
}

import Foundation

/// URLs as they leave memory: the password of a URL (`https://user:secret@host/`), or a user name
/// given alone (often a token: `https://TOKEN@host/`, `https://KEY:@host/`), is never shown in a
/// message or written to disk, as curl and browsers leave it out.
enum RedactedURL {
    /// `url`'s text for a message: a password replaced with `***` (`user:***@`), a user name given
    /// alone (or with an empty password) with `***`.
    static func shown(_ url: URL) -> String {
        let text = url.absoluteString
        guard let userinfo = userinfoRange(in: text) else { return text }
        return text.replacingCharacters(in: userinfo, with: masked(text[userinfo], with: "***"))
    }

    /// `url`'s text for a record on disk: the URL itself, or — with credentials — the URL with them
    /// replaced by a 64-bit hash of the whole URL (the first half of a downloaded file's name), so
    /// two passwords stay two records and neither is written.
    static func recorded(_ url: URL) -> String {
        let text = url.absoluteString
        guard let userinfo = userinfoRange(in: text) else { return text }
        let hash = StableHash.hex(StableHash.fnv1a64(Array(text.utf8)))
        return text.replacingCharacters(in: userinfo, with: masked(text[userinfo], with: "hash-" + hash))
    }

    /// The user name kept when a password follows it; the rest replaced with `mask`. A user name
    /// with no password, or an empty one (`https://KEY:@host/`, as API keys are often given), is
    /// the secret itself and goes too.
    private static func masked(_ userinfo: Substring, with mask: String) -> String {
        guard let colon = userinfo.firstIndex(of: ":"), userinfo.index(after: colon) < userinfo.endIndex else { return mask }
        return userinfo[..<colon] + ":" + mask
    }

    /// Where the user information of the URL `text` is (before the `@` of its authority), if it has any.
    static func userinfoRange(in text: String) -> Range<String.Index>? {
        guard let scheme = text.range(of: "://") else { return nil }
        let authority = text[scheme.upperBound...].prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard let at = authority.lastIndex(of: "@") else { return nil }
        return authority.startIndex ..< at
    }
}

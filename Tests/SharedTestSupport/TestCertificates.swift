import Foundation

/// The throwaway test CA and certificates in `Tests/Certificates` (made by its `make-certificates.py`).
public enum TestCertificates {
    /// The folder holding them.
    public static let directory: String = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Certificates").path

    /// The path of `name` in the folder.
    public static func path(_ name: String) -> String { directory + "/" + name }
}

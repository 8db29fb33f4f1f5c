import Crypto
import SwiftASN1
import X509

/// The key pair and CSR of one `ClientCSR` (pure: no storage).
enum ClientCSR {
    static let nonceLength = 32

    /// The CSR, and the signature over the nonce exactly as received: what the released cluster, its reference
    /// server and the certification helper (`verify(signature, data=nonce, ECDSA(SHA256))`) agree on.
    static func make(nonce: [UInt8], privateKey: P256.Signing.PrivateKey = P256.Signing.PrivateKey())
        throws -> (csr: [UInt8], nonceSignature: [UInt8], privateKey: P256.Signing.PrivateKey)
    {
        let request = try CertificateSigningRequest(
            version: .v1, subject: try DistinguishedName { CommonName("pushav camera") },
            privateKey: Certificate.PrivateKey(privateKey), attributes: CertificateSigningRequest.Attributes(),
            signatureAlgorithm: .ecdsaWithSHA256)
        var serializer = DER.Serializer()
        try serializer.serialize(request)
        let signature = try privateKey.signature(for: nonce)
        return (serializer.serializedBytes, Array(signature.rawRepresentation), privateKey)
    }
}

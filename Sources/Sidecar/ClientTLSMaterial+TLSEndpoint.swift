import Ingest
import TransportModel

// Where the cluster's TLS Client Management endpoint becomes the uploader's TLS material: the one conversion, so the
// uploader knows nothing of the cluster.
extension ClientTLSMaterial {
    /// The material of a Matter TLS Client Management endpoint (the transport model's ``TLSEndpoint``).
    public init(_ endpoint: TLSEndpoint) {
        let chain = endpoint.clientCertificateChain.allSatisfy(Self.isPEM)
            ? endpoint.clientCertificateChain.flatMap { Array($0) }
            // DER certificates cannot be concatenated meaningfully; keep the leaf (Matter's TLSCCDID holds a leaf).
            : endpoint.clientCertificateChain.first.map { Array($0) } ?? []
        self.init(trustedCertificates: Array(endpoint.caCertificate), certificateChain: chain,
                  privateKey: Array(endpoint.privateKey))
    }
}

import ArgumentParser

@main
struct PushAV: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pushav",
        abstract: "Record camera events as CMAF and push them to a Matter Push AV ingest endpoint.",
        discussion: """
            pushav reads any video FFmpeg can open (a file or a camera URL), detects motion, and cuts event clips \
            the way a Matter Push AV transport records them (trigger, augmentation, max and blind durations, \
            pre-roll), each a CMAF session: one init segment plus numbered media segments per track, the layout \
            Matter Push AV uploads use. It can push them over HTTPS with client certificates, durably, and check \
            CMAF files with its own box parser.

            Examples:
              pushav record video.mp4 --out out
              pushav record video.mp4 --out out --sensitivity 10 --max-duration 15 --json
              pushav record camera.ts --out out --trigger continuous --segment-duration 2000 --chunk-duration 500
              pushav record video.mp4 --out out --push https://ingest/streams/1/ --ca ca.pem --cert cam.pem --key cam.key
              pushav serve --config serve.yaml
              pushav inspect out/session_1
              pushav receive --root received --cert server.pem --key server.key --client-ca ca.pem
            """,
        subcommands: [RecordCommand.self, ServeCommand.self, InspectCommand.self, ReceiveCommand.self, UploadCommand.self]
    )
}

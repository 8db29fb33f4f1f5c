import ArgumentParser

@main
struct PushAV: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pushav",
        abstract: "Record camera events as CMAF and push them to a Matter Push AV ingest endpoint.",
        discussion: """
            pushav reads any video FFmpeg can open (a file or a camera URL), cuts it into CMAF sessions (one init \
            segment plus numbered media segments per track, the layout Matter Push AV uploads use) and checks CMAF \
            files with its own box parser.

            Examples:
              pushav record TestMedia/a_720p30_h264_main.mp4 --out out --trigger continuous
              pushav record camera.ts --out out --trigger continuous --segment-duration 2000 --chunk-duration 500 --json
              pushav inspect out/session_1/video/video.init out/session_1/video/segment_*.m4s
            """,
        subcommands: [RecordCommand.self, InspectCommand.self, ReceiveCommand.self, UploadCommand.self]
    )
}

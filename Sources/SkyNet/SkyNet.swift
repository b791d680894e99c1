// The one import for users of the library: `import SkyNet` brings the public API of every part (docs/API.md).
@_exported import SkyNetActors
@_exported import SkyNetAuth
@_exported import SkyNetCluster
@_exported import SkyNetDashboard
@_exported import SkyNetHTTP
@_exported import SkyNetJournal
@_exported import SkyNetLink
@_exported import SkyNetMetrics
@_exported import SkyNetNode
@_exported import SkyNetRuntime
@_exported import SkyNetSSH
@_exported import SkyNetScheduler
@_exported import SkyNetTransfer
@_exported import SkyNetTransport
@_exported import SkyNetWire
@_exported import SkyNetWork

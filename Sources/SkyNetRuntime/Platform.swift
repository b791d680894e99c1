// The platform every part of SkyNet builds on, imported here once for all of them: every
// target imports SkyNetRuntime, and with it FoundationEssentials (not Foundation, so that a
// static `skynet` carries no ICU; Foundation where Essentials is missing, as on macOS) and the
// C library (Glibc on Linux, Darwin on macOS).
#if canImport(FoundationEssentials)
@_exported import FoundationEssentials
#else
@_exported import Foundation
#endif
#if canImport(Glibc)
@_exported import Glibc
#elseif canImport(Darwin)
@_exported import Darwin
#endif

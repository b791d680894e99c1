// The system calls Swift's C library modules leave out: readiness (epoll and eventfd on Linux,
// kqueue on macOS), for SkyNetRuntime's event loop.
#ifndef CSKYNET_PLATFORM_H
#define CSKYNET_PLATFORM_H

#if defined(__linux__)
#include <sys/epoll.h>
#include <sys/eventfd.h>
#elif defined(__APPLE__)
#include <sys/event.h>
#endif

#endif

// Headers only (include/CSkyNetPlatform.h): a C target needs one source file to build.

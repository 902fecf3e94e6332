//===- AtomicWrite.h - replace a file all at once ---------------*- C++ -*-===//
//
// Every file mixc writes that someone may read at the same time (configs,
// metrics, result tables, reports, emitted IR) is written here: to a
// temporary named by the writer's pid in the same folder, checked, fsynced,
// renamed over the target, and the folder fsynced. A reader sees the old
// file or the new one; a crash leaves the old one; two writers never share
// a temporary. Only a regular file is ever renamed over: a symlink is
// followed (the link stays, what it names is written), a character device
// or FIFO (`/dev/stdout`, `/dev/null`, a pipe) is written in place, and a
// block device or socket is refused. The temporaries that a writer killed
// mid-write left beside the same target are removed by the next write.
//
//===----------------------------------------------------------------------===//
#ifndef MIXC_SUPPORT_ATOMICWRITE_H
#define MIXC_SUPPORT_ATOMICWRITE_H

#include <string>

namespace mixc::support {

/// Writes `text` to `path` atomically; false with `error` set otherwise (the
/// temporary is removed). A `path` that is a directory is an error.
bool writeFileAtomically(const std::string &path, const std::string &text, std::string &error);

/// Removes the temporaries that writers killed mid-write left in `dir`
/// (`NAME.tmp<pid>` and `NAME.tmp<pid>.<ext>`, as writeFileAtomically and the
/// kernel cache name them): those of this user whose process is gone and
/// that are at least `minAgeSeconds` old (a folder several machines share,
/// such as a kernel cache in a network home, has writers whose pids this
/// machine cannot see). Returns how many it removed.
int removeStaleTemporaries(const std::string &dir, double minAgeSeconds = 0);

/// Creates the folder `dir` and its parents; false with `error` (the path
/// and the OS's reason: read-only, a file in the way, no space) otherwise.
bool makeFolder(const std::string &dir, std::string &error);

} // namespace mixc::support

#endif

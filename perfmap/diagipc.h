/* diagipc.h: minimal .NET diagnostics IPC client (EnablePerfMap / DisablePerfMap), container-safe. */
#ifndef SPANPROF_DIAGIPC_H
#define SPANPROF_DIAGIPC_H

#include <stddef.h>
#include <stdint.h>

#include "dotnet.h"

/*
 * Wire format (checked against dotnet/runtime src/native/eventpipe/ds-types.h, ds-protocol.c and
 * against .NET 10.0.12): every message starts with a 20-byte header
 *   char magic[14] = "DOTNET_IPC_V1\0"; u16 size (header + payload); u8 command_set;
 *   u8 command_id; u16 reserved (0)
 * all little-endian. Replies use command set 0xFF (Server) with id 0x00 (OK) or 0xFF (Error),
 * and for these commands a u32 HRESULT payload (24 bytes in all).
 */
#define DIAGIPC_MAGIC			"DOTNET_IPC_V1"	/* 13 chars + NUL = 14 bytes */
#define DIAGIPC_MAGIC_LEN		14
#define DIAGIPC_HEADER_LEN		20
#define DIAGIPC_MAX_MESSAGE		UINT16_MAX

#define DIAGIPC_SET_PROCESS		0x04
#define DIAGIPC_SET_SERVER		0xFF
#define DIAGIPC_PROCESS_ENABLE_PERFMAP	0x05
#define DIAGIPC_PROCESS_DISABLE_PERFMAP	0x06
#define DIAGIPC_SERVER_OK		0x00
#define DIAGIPC_SERVER_ERROR		0xFF

/* PerfMapType payload of EnablePerfMap (same values as DOTNET_PerfMapEnabled). */
enum diagipc_perfmap_type {
	DIAGIPC_PERFMAP_DISABLED = 0,
	DIAGIPC_PERFMAP_ALL = 1,	/* perf map + jitdump */
	DIAGIPC_PERFMAP_JITDUMP = 2,
	DIAGIPC_PERFMAP_PERFMAP = 3,
};

/* HRESULTs seen in error replies (ds-types.h). */
#define DIAGIPC_E_UNKNOWN_COMMAND	0x80131385u
#define DIAGIPC_E_INVALIDARG		0x80070057u
#define DIAGIPC_E_NOTSUPPORTED		0x80131515u

#define DIAGIPC_DEFAULT_TIMEOUT_MS	2000

struct diagipc_header {
	uint16_t size;		/* whole message, header included */
	uint8_t command_set;
	uint8_t command_id;
	uint16_t reserved;
};

/* Encode a request into buf. Returns the message length, or -ENOSPC (buf too small),
 * -EMSGSIZE (payload makes the message exceed 65535 bytes), -EINVAL. */
int diagipc__encode(uint8_t command_set, uint8_t command_id, const void *payload,
		    size_t payload_len, uint8_t *buf, size_t len);
int diagipc__encode_enable_perfmap(uint32_t type, uint8_t *buf, size_t len);	/* 24 bytes */
int diagipc__encode_disable_perfmap(uint8_t *buf, size_t len);			/* 20 bytes */

/* Parse a message header. Returns 0, -EPROTO (bad magic, size smaller than a header),
 * -ENODATA (fewer than 20 bytes). */
int diagipc__parse_header(const uint8_t *buf, size_t len, struct diagipc_header *h);

/* Parse a complete reply carrying a u32 HRESULT. Returns 0 for an OK reply (*hresult is its
 * payload, normally 0), -EREMOTEIO for an Error reply (*hresult = the runtime's HRESULT),
 * -EPROTO for anything malformed (bad magic, not the Server command set, size not 24,
 * truncated). hresult may be NULL. */
int diagipc__parse_hresult_reply(const uint8_t *buf, size_t len, uint32_t *hresult);

/* 0 when name is "dotnet-diagnostic-<nspid>-<key>-socket" (key: decimal u64), with *key set;
 * -EINVAL otherwise. */
int diagipc__parse_socket_name(const char *name, int nspid, uint64_t *key);

/* Where and how to reach one runtime's diagnostic socket. */
struct diagipc_target {
	int root_fd;			/* the process's root (procfs__open_root); not owned */
	int pid;			/* host pid: the socket's listener must be this process
					 * (SO_PEERCRED); 0 skips the check */
	int nspid;			/* pid inside its namespace: part of the socket name */
	uint64_t key;			/* expected disambiguation key (starttime); 0 = unknown */
	int timeout_ms;			/* for connect, send and receive together */
	char dir[DOTNET_DIR_MAX];	/* socket directory inside the root ($TMPDIR or /tmp) */
};

/* Fill t for one process: dir_fd is its open /proc/<pid> directory, the only way its environment
 * and start time are read (socket dir from its TMPDIR, dotnet__tmp_dir; key from its start time);
 * root_fd its root; pid its host pid, used only to check the socket's listener (SO_PEERCRED);
 * nspid its pid in its own namespace. Returns 0 or -errno (-EINVAL: bad arguments). */
int diagipc__target_init(struct diagipc_target *t, int dir_fd, int root_fd, int pid, int nspid);

/*
 * Find the socket of t in t->dir (listed through the root without following symlinks; at most
 * 100000 entries are looked at). Only sockets are considered, never symlinks. With several
 * candidates (stale sockets of a reused pid) the one whose key equals t->key wins, else the most
 * recently modified. Writes the file name (no directory) to name. Returns 0, -ENOENT (none),
 * -ENAMETOOLONG, or the error opening the directory (-ELOOP for a symlinked directory).
 */
int diagipc__find_socket(const struct diagipc_target *t, char *name, size_t len);

/* Connect to <t->dir>/<name> inside the root: the socket inode is opened with O_PATH through
 * rootfs__open (ROOTFS_NO_SYMLINKS), checked to be a socket, and connected to through
 * /proc/self/fd/<n>. When t->pid is set, a listener other than that process is -EPERM.
 * Returns a connected, non-blocking socket fd or -errno (-ETIMEDOUT). */
int diagipc__connect(const struct diagipc_target *t, const char *name);

/*
 * Send one request and read its HRESULT reply, within t->timeout_ms overall: find the socket,
 * connect, send, receive. Returns 0 (OK reply), -EREMOTEIO (the runtime answered with an error
 * HRESULT, in *hresult), -EPROTO (malformed or missing reply), -ETIMEDOUT, or -errno.
 */
int diagipc__command(const struct diagipc_target *t, uint8_t command_set, uint8_t command_id,
		     const void *payload, size_t payload_len, uint32_t *hresult);

/* EnablePerfMap(type) / DisablePerfMap on the process described as for diagipc__target_init;
 * same returns as diagipc__command (and those of diagipc__target_init). hresult may be NULL. */
int diagipc__enable_perfmap(int dir_fd, int root_fd, int pid, int nspid, uint32_t type,
			    uint32_t *hresult);
/* The same, giving up after timeout_ms (> 0; DIAGIPC_DEFAULT_TIMEOUT_MS otherwise). */
int diagipc__enable_perfmap_within(int dir_fd, int root_fd, int pid, int nspid, uint32_t type,
				   int timeout_ms, uint32_t *hresult);
int diagipc__disable_perfmap(int dir_fd, int root_fd, int pid, int nspid, uint32_t *hresult);

#endif /* SPANPROF_DIAGIPC_H */

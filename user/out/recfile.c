// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <zlib.h>
#include "log.h"
#include "outfile.h"
#include "recfile.h"

struct recfile {
	int fd;
	gzFile gz;	/* NULL: plain NDJSON */
	char *path;
	bool existed;	/* --force over a file: emptied at the first line, never before */
	bool started;	/* a line was written */
	bool broken;	/* a line could not be written whole: cut back to the lines before */
	off_t whole;	/* the file's size after its last whole line */
};

static bool gz_name(const char *path)
{
	size_t n = strlen(path);

	return n > 3 && !strcmp(path + n - 3, ".gz");
}

/*
 * A new file, or with force an existing regular file (never a device, FIFO or symlink): opened,
 * not emptied; its content goes only when the first line is written, so a session that fails
 * to start leaves it as it was. A .gz file's stream starts there too (zlib writes a header as
 * it closes even an unused stream).
 */
struct recfile *recfile_create(const char *path, bool force)
{
	struct recfile *f = calloc(1, sizeof(*f));
	struct stat st;

	if (!f || !(f->path = strdup(path))) {
		free(f);
		errorf("out of memory");
		return NULL;
	}
	f->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (f->fd < 0 && errno == EEXIST && force) {
		f->existed = true;
		f->fd = open(path, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (f->fd >= 0 && (fstat(f->fd, &st) || !S_ISREG(st.st_mode))) {
			close(f->fd);
			f->fd = -1;
			errno = EEXIST;
		} else if (f->fd < 0 && (errno == ELOOP || errno == ENXIO)) {	/* link, FIFO */
			errno = EEXIST;
		}
		if (f->fd < 0 && errno == EEXIST) {
			errorf("%s exists and is not a regular file: choose another name", path);
			goto fail;
		}
	}
	if (f->fd < 0) {
		if (errno == EEXIST && !force && (lstat(path, &st) || !S_ISREG(st.st_mode)))
			errorf("%s exists and is not a regular file: choose another name", path);
		else if (errno == EEXIST)
			errorf("%s exists: choose another name, or --force to overwrite it", path);
		else
			errorf("cannot create %s: %s", path, strerror(errno));
		goto fail;
	}
	return f;
fail:
	free(f->path);
	free(f);
	return NULL;
}

/* The first line: an existing file emptied, a .gz file's stream started. */
static int start(struct recfile *f)
{
	if (f->existed && ftruncate(f->fd, 0))
		return -1;
	f->started = true;
	if (gz_name(f->path)) {
		f->gz = gzdopen(f->fd, "wb6");
		if (!f->gz) {
			errno = ENOMEM;
			return -1;
		}
	}
	return 0;
}

static int write_line(struct recfile *f, const char *buf, size_t len)
{
	char *line;
	int err, zerr;

	if (!f->gz) {
		/* one write when it fits: a reader sees the line whole or not at all */
		line = malloc(len + 1);
		if (!line)
			return fd_write_all(f->fd, buf, len) ?: fd_write_all(f->fd, "\n", 1);
		memcpy(line, buf, len);
		line[len] = '\n';
		err = fd_write_all(f->fd, line, len + 1);
		free(line);
		return err;
	}
	/* flushed at each line: the file is a readable stream up to its last whole line */
	if ((len && gzwrite(f->gz, buf, (unsigned int)len) != (int)len) ||
	    gzwrite(f->gz, "\n", 1) != 1 || gzflush(f->gz, Z_SYNC_FLUSH) != Z_OK) {
		gzerror(f->gz, &zerr);
		if (zerr != Z_ERRNO)
			errno = EIO;
		return -1;
	}
	return 0;
}

/*
 * One line, whole. A line that cannot be written (a full disk) is cut off again, so the file
 * ends with the last whole line, and nothing more is written: -1 with errno set.
 */
int recfile_line(struct recfile *f, const char *buf, size_t len)
{
	off_t end;
	int err;

	if (f->broken) {
		errno = EIO;
		return -1;
	}
	if (!f->started && start(f))
		return -1;
	if (write_line(f, buf, len)) {
		err = errno;
		f->broken = true;
		if (ftruncate(f->fd, f->whole))
			warnf("cutting %s back to its last whole line: %s", f->path,
			      strerror(errno));
		errno = err;
		return -1;
	}
	end = lseek(f->fd, 0, SEEK_END);
	if (end > 0)
		f->whole = end;
	return 0;
}

/*
 * The gzip stream of a broken file closed without a byte more (its pending output and trailer
 * would follow the cut): zlib writes them to /dev/null instead.
 */
static int gz_close_unwritten(struct recfile *f)
{
	int nul = open("/dev/null", O_WRONLY | O_CLOEXEC);

	if (nul >= 0) {
		dup2(nul, f->fd);
		close(nul);
	}
	gzclose(f->gz);
	return 0;
}

int recfile_close(struct recfile *f)
{
	int err = 0;

	if (!f)
		return 0;
	if (!f->started && start(f))	/* no line: an empty file, or an empty gzip stream */
		err = -1;
	if (f->gz && f->broken) {
		gz_close_unwritten(f);
	} else if (f->gz) {
		if (gzclose(f->gz) != Z_OK)	/* closes fd too */
			err = -1;
	} else if (close(f->fd)) {
		err = -1;
	}
	if (err)
		errorf("closing %s: %s", f->path, strerror(errno ? errno : EIO));
	free(f->path);
	free(f);
	return err;
}

void recfile_discard(struct recfile *f)
{
	if (!f)
		return;
	if (f->gz)
		gz_close_unwritten(f);
	else
		close(f->fd);
	/* a file that was there stays as it was until a line is written */
	if (!f->existed || f->started)
		unlink(f->path);
	free(f->path);
	free(f);
}

/* talker.c: worker threads for talks to processes (talker.h). One queue, up to TALK_WORKERS
 * threads started as talks come and kept for the program's life. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "talker.h"

enum talk_state { TALK_QUEUED, TALK_RUNNING, TALK_ENDED };

struct talk {
	int (*fn)(void *arg);
	void *arg;
	void (*free_arg)(void *arg);
	enum talk_state state;
	int result;
	int abandoned;
	struct talk *next;	/* in the queue */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER;	/* a talk was queued */
static pthread_cond_t ended = PTHREAD_COND_INITIALIZER;	/* a talk ended */
static struct talk *head, *tail;
static uint32_t workers, idle_workers;
static struct talk_stats st;

static void destroy(struct talk *t)
{
	if (t->free_arg)
		t->free_arg(t->arg);
	free(t);
}

/* Unlink a queued talk; the lock is held. */
static void unqueue(struct talk *t)
{
	struct talk **pp = &head, *prev = NULL;

	for (; *pp && *pp != t; prev = *pp, pp = &(*pp)->next)
		;
	if (!*pp)
		return;
	*pp = t->next;
	if (tail == t)
		tail = prev;
	st.queued--;
}

static void *worker(void *unused)
{
	(void)unused;
	pthread_mutex_lock(&lock);
	for (;;) {
		struct talk *t;
		int r;

		while (!head) {
			idle_workers++;
			pthread_cond_wait(&work, &lock);
			idle_workers--;
		}
		t = head;
		unqueue(t);
		t->state = TALK_RUNNING;
		st.running++;
		pthread_mutex_unlock(&lock);
		r = t->fn(t->arg);
		pthread_mutex_lock(&lock);
		st.running--;
		st.ended++;
		t->result = r;
		t->state = TALK_ENDED;
		if (t->abandoned) {
			pthread_mutex_unlock(&lock);
			destroy(t);
			pthread_mutex_lock(&lock);
		} else {
			pthread_cond_broadcast(&ended);
		}
	}
	return NULL;
}

struct talk *talk__start(int (*fn)(void *arg), void *arg, void (*free_arg)(void *arg))
{
	struct talk *t = calloc(1, sizeof(*t));
	int err = 0;

	if (!t) {
		errno = ENOMEM;
		return NULL;
	}
	*t = (struct talk){ fn, arg, free_arg, TALK_QUEUED, 0, 0, NULL };
	pthread_mutex_lock(&lock);
	/* A worker for each talk waiting beyond the idle ones, up to TALK_WORKERS. */
	if (idle_workers <= st.queued && workers < TALK_WORKERS) {
		pthread_attr_t attr;
		pthread_t th;

		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&attr, 256 << 10);
		err = pthread_create(&th, &attr, worker, NULL);
		pthread_attr_destroy(&attr);
		if (!err)
			workers++;
		else if (workers)
			err = 0;	/* the ones there will get to it */
	}
	if (err) {
		pthread_mutex_unlock(&lock);
		free(t);
		errno = err;
		return NULL;
	}
	if (tail)
		tail->next = t;
	else
		head = t;
	tail = t;
	st.queued++;
	st.started++;
	pthread_cond_signal(&work);
	pthread_mutex_unlock(&lock);
	return t;
}

int talk__poll(struct talk *t, int *result)
{
	int done;

	pthread_mutex_lock(&lock);
	done = t->state == TALK_ENDED;
	if (done && result)
		*result = t->result;
	pthread_mutex_unlock(&lock);
	return done;
}

int talk__finish(struct talk *t, int *result)
{
	pthread_mutex_lock(&lock);
	if (t->state == TALK_QUEUED) {
		unqueue(t);
		st.cancelled++;
		pthread_mutex_unlock(&lock);
		free(t);
		return 0;
	}
	while (t->state != TALK_ENDED)
		pthread_cond_wait(&ended, &lock);
	if (result)
		*result = t->result;
	pthread_mutex_unlock(&lock);
	free(t);
	return 1;
}

void talk__abandon(struct talk *t)
{
	pthread_mutex_lock(&lock);
	st.abandoned++;
	if (t->state == TALK_RUNNING) {
		t->abandoned = 1;	/* the worker frees it */
		pthread_mutex_unlock(&lock);
		return;
	}
	if (t->state == TALK_QUEUED)
		unqueue(t);
	pthread_mutex_unlock(&lock);
	destroy(t);
}

void talk__stats(struct talk_stats *out)
{
	pthread_mutex_lock(&lock);
	*out = st;
	pthread_mutex_unlock(&lock);
}

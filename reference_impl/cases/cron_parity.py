"""cron-parity: the next fire time a client computes for a cron pattern (`nextMillis`).

A pattern scheduler's fire time is the client's: Queue.upsertJobScheduler asks its cron
library for the time after now (or after startDate, when that is later), and the scripts store
what it sent. The iteration's job id is `repeat:<id>:<fire time>`, so two clients that disagree
by one millisecond write two jobs for one iteration, or none. The expectations are the pinned
npm client's own answers (`reference_impl.cron_answers`), in UTC unless a case names a zone.

The patterns are chosen to break implementations: the seconds field, steps and ranges, month
lengths and leap years, `L` and `#`, day-of-month with day-of-week, aliases, DST gaps and
overlaps (America/New_York, Europe/London, Australia/Lord_Howe's half-hour shift), zones off
the whole hour, startDate and endDate, and the patterns the client rejects.

Claimed from 6.0.0: the cron-parser of every 6.x release (5.6.1 to 5.10.3) gives these
answers. (Two patterns it answered differently before 6.1.2 are left out, as the answers
hold one version: `* * *`, every minute from cron-parser 5.10.0, and a standalone `L` day of
week, rejected from 5.7.0.) An `every` scheduler's fire time is the script's (job-schedulers).
"""

from __future__ import annotations

from datetime import datetime

from reference_impl import versions
from reference_impl.cases import Area, Case, Flag
from reference_impl.scheduler_ops import NextMillis

#: Saturday 2026-03-07, 12:00:00.123 UTC: most cases' clock.
SAT = "2026-03-07T12:00:00.123Z"
NY = "America/New_York"
LONDON = "Europe/London"
LORD_HOWE = "Australia/Lord_Howe"

#: Where the answers come from: the client's computation and its cron library.
#: (6.0.0 pins cron-parser 5.6.1, 6.7.0 pins 5.10.3: the same answers.)
SOURCES = ("https://github.com/taskforcesh/bullmq/releases/tag/v6.0.0",
           "https://github.com/taskforcesh/bullmq/releases/tag/v6.7.0")

NOTES = {
    "seconds": Flag(
        "score",
        "Six fields put seconds first. The next fire time is strictly after now, on a whole "
        "second: a clock exactly on a match fires at the next one.",
        SOURCES,
    ),
    "fields": Flag(
        "score",
        "Minutes and hours: lists, ranges, and steps, which count from the range's start and "
        "start again at the next hour or day (a step larger than the range fires once).",
        SOURCES,
    ),
    "day-of-month": Flag(
        "score",
        "Day of month and month: month lengths, leap years (2100 is not one), L for the last "
        "day, month names in any case, and steps from day 1.",
        SOURCES,
    ),
    "day-of-week": Flag(
        "score",
        "Day of week: 0 and 7 are Sunday, names in any case, n#k the k-th weekday n of the "
        "month, nL the last. With a day of month too, either one matches (OR).",
        SOURCES,
    ),
    "aliases": Flag(
        "score",
        "@yearly, @annually, @monthly, @weekly (Sunday), @daily, @hourly, and cron-parser's "
        "own @minutely, @secondly and @weekdays.",
        SOURCES,
    ),
    "time-zone": Flag(
        "score",
        "A tz evaluates the pattern in that zone's wall clock, offsets off the whole hour "
        "too. A time in a DST gap moves forward by the shift (02:30 New York: 03:30), but "
        "Lord Howe's 02:15, in its half-hour gap, waits for the next day; a time in a DST "
        "overlap fires once, at its first instance.",
        SOURCES,
    ),
    "window": Flag(
        "boundary",
        "startDate: the next fire time after startDate when that is later than now (a fire "
        "time equal to it is skipped). endDate: a fire time at endDate still counts; past "
        "it there is none, and the upsert adds no iteration; an endDate before now makes "
        "Queue.upsertJobScheduler throw.",
        SOURCES,
    ),
    "invalid": Flag(
        "precondition",
        "Patterns and zones the client rejects (its upsert throws): out-of-range values, step "
        "0, W, L-n, # in a list, unknown aliases, too many fields, an unknown zone. A client "
        "that accepts one schedules iterations Node never would.",
        SOURCES,
    ),
}


def _ms(iso: str) -> int:
    return int(datetime.fromisoformat(iso).timestamp() * 1000)


def _case(name: str, description: str, flag: str, pattern: str, now: str = SAT, *,
          tz: str | None = None, start: str | None = None, end: str | None = None) -> Case:
    op = NextMillis(pattern, _ms(now), tz, None if start is None else _ms(start),
                    None if end is None else _ms(end))
    return Case(name, description, (op,), (flag,))


def _seconds_cases() -> list[Case]:
    return [
        _case("every-second", "Every second, at .123: the next whole second.", "seconds",
              "* * * * * *"),
        _case("every-second-on-a-second", "Every second, on a whole second: one second later, "
              "not now.", "seconds", "* * * * * *", "2026-03-07T12:00:00.000Z"),
        _case("seconds-step", "*/15 seconds at :00.123 fires at :15.", "seconds",
              "*/15 * * * * *"),
        _case("seconds-step-wraps", "*/15 seconds at :45.500 fires at the next minute's :00.",
              "seconds", "*/15 * * * * *", "2026-03-07T12:00:45.500Z"),
        _case("second-match-exact", "Second 30, at exactly :30.000: the next minute's :30.",
              "seconds", "30 * * * * *", "2026-03-07T12:00:30.000Z"),
        _case("second-match-ahead", "Second 30, at :29.999: :30.000 the same minute.",
              "seconds", "30 * * * * *", "2026-03-07T12:00:29.999Z"),
        _case("seconds-list", "Seconds 5,10,50 at :10.001: :50.", "seconds",
              "5,10,50 * * * * *", "2026-03-07T12:00:10.001Z"),
        _case("seconds-range-step", "Seconds 10-20/5 at :16: :20.", "seconds",
              "10-20/5 * * * * *", "2026-03-07T12:00:16.000Z"),
        _case("second-zero-next-minute", "Second 0 at :59.999: the next minute.", "seconds",
              "0 * * * * *", "2026-03-07T12:00:59.999Z"),
        _case("last-second-of-day", "59 59 23 (six fields): 23:59:59 the same day.", "seconds",
              "59 59 23 * * *"),
        _case("seconds-start-step", "Seconds 0/20 at :41: the next minute (0, 20, 40).",
              "seconds", "0/20 * * * * *", "2026-03-07T12:00:41.000Z"),
        _case("seconds-step-not-dividing", "*/7 seconds at :56.5: :00, not :03 (the step "
              "restarts each minute).", "seconds", "*/7 * * * * *", "2026-03-07T12:00:56.500Z"),
        _case("six-field-midnight", "0 0 0 (six fields) is midnight.", "seconds",
              "0 0 0 * * *"),
        _case("seconds-offset-step", "Seconds 5/25 at :31: :55 (5, 30, 55).", "seconds",
              "5/25 * * * * *", "2026-03-07T12:00:31.000Z"),
        _case("seconds-step-beyond-range", "*/90 seconds is accepted and fires at second 0 "
              "only.", "seconds", "*/90 * * * * *"),
        _case("seconds-in-a-zone", "Every second in Asia/Kathmandu: the zone does not move "
              "seconds.", "seconds", "* * * * * *", tz="Asia/Kathmandu"),
    ]


def _field_cases() -> list[Case]:
    return [
        _case("every-minute", "Every minute, at 12:00:00.123: 12:01.", "fields", "* * * * *"),
        _case("every-minute-on-a-minute", "Every minute, exactly on 12:00:00.000: 12:01.",
              "fields", "* * * * *", "2026-03-07T12:00:00.000Z"),
        _case("minutes-step", "*/5 minutes at 12:03: 12:05.", "fields", "*/5 * * * *",
              "2026-03-07T12:03:00.000Z"),
        _case("minutes-step-restarts-hourly", "*/7 minutes at 12:59: 13:00, not 13:02.",
              "fields", "*/7 * * * *", "2026-03-07T12:59:00.000Z"),
        _case("hourly", "Minute 0 at 12:00:00.123: 13:00.", "fields", "0 * * * *"),
        _case("minutes-list", "Minutes 15,45 at 12:20: 12:45.", "fields", "15,45 * * * *",
              "2026-03-07T12:20:00.000Z"),
        _case("hours-step", "Every 2 hours at 13:30: 14:00.", "fields", "0 */2 * * *",
              "2026-03-07T13:30:00.000Z"),
        _case("hours-step-restarts-daily", "Every 5 hours at 21:00: midnight (0, 5, ..., 20).",
              "fields", "0 */5 * * *", "2026-03-07T21:00:00.000Z"),
        _case("hours-range-step", "Hours 10-20/3 at 12:00: 13:00 (10, 13, 16, 19).", "fields",
              "0 10-20/3 * * *"),
        _case("hours-range-step-next-day", "Hours 10-20/3 at 19:30: 10:00 the next day.",
              "fields", "0 10-20/3 * * *", "2026-03-07T19:30:00.000Z"),
        _case("minutes-step-25", "*/25 minutes at 12:51: 13:00 (0, 25, 50).", "fields",
              "*/25 * * * *", "2026-03-07T12:51:00.000Z"),
        _case("daily-at-0230", "02:30 daily, at noon: 02:30 the next day.", "fields",
              "30 2 * * *"),
        _case("midnight-last-ms", "Midnight, at 23:59:59.999: one ms later.", "fields",
              "0 0 * * *", "2026-03-07T23:59:59.999Z"),
        _case("hours-range-past-end", "Hours 9-17, at 17:00:00.001: 09:00 the next day.",
              "fields", "0 9-17 * * *", "2026-03-07T17:00:00.001Z"),
        _case("hours-list-exact", "Hours 0,12 on 12:00:00.000 exactly: the next midnight.",
              "fields", "0 0,12 * * *", "2026-03-07T12:00:00.000Z"),
        _case("minutes-range-next-hour", "Minutes 1-5 at 12:05:30: 13:01.", "fields",
              "1-5 * * * *", "2026-03-07T12:05:30.000Z"),
        _case("noon-exact", "Noon, on 12:00:00.000 exactly: noon the next day.", "fields",
              "0 12 * * *", "2026-03-07T12:00:00.000Z"),
        _case("hours-full-range-step", "Hours 0-23/6 at 12:00:00.123: 18:00.", "fields",
              "0 0-23/6 * * *"),
        _case("minutes-range-step", "Minutes 5-10/2 at 12:07: 12:09 (5, 7, 9).", "fields",
              "5-10/2 * * * *", "2026-03-07T12:07:00.000Z"),
        _case("end-of-century", "Every minute at 2099-12-31 23:59:30: 2100-01-01 00:00.",
              "fields", "* * * * *", "2099-12-31T23:59:30.000Z"),
        _case("extra-spaces", "Leading, trailing and doubled spaces are accepted.", "fields",
              "  0  0 * * *  "),
    ]


def _day_of_month_cases() -> list[Case]:
    return [
        _case("monthly-first", "The 1st at midnight, on March 7: April 1.", "day-of-month",
              "0 0 1 * *"),
        _case("day-31-skips-april", "Day 31 from April 1: May 31 (April has 30 days).",
              "day-of-month", "0 0 31 * *", "2026-04-01T00:00:00.000Z"),
        _case("day-31-skips-february", "Day 31 at noon on January 31: March 31.",
              "day-of-month", "0 0 31 * *", "2026-01-31T12:00:00.000Z"),
        _case("day-30-skips-february", "Day 30 from February 1: March 30.", "day-of-month",
              "0 0 30 * *", "2026-02-01T00:00:00.000Z"),
        _case("leap-day-from-2026", "February 29 from March 2026: 2028-02-29.", "day-of-month",
              "0 0 29 2 *"),
        _case("leap-day-next-day", "February 29 from 2028-02-28: the next day.",
              "day-of-month", "0 0 29 2 *", "2028-02-28T12:00:00.000Z"),
        _case("day-29-common-february", "Day 29 from February 2026: March 29.",
              "day-of-month", "0 0 29 * *", "2026-02-01T00:00:00.000Z"),
        _case("day-29-leap-february", "Day 29 from February 2028: February 29.",
              "day-of-month", "0 0 29 * *", "2028-02-01T00:00:00.000Z"),
        _case("leap-day-skips-2100", "February 29 from 2097: 2104 (2100 is not a leap year).",
              "day-of-month", "0 0 29 2 *", "2097-01-01T00:00:00.000Z"),
        _case("day-step-from-one", "Every 3rd day at noon on March 31: April 1 (1, 4, ..., "
              "31).", "day-of-month", "0 0 */3 * *", "2026-03-31T12:00:00.000Z"),
        _case("day-step-ten", "Every 10th day on March 21: March 31 (1, 11, 21, 31).",
              "day-of-month", "0 0 */10 * *", "2026-03-21T12:00:00.000Z"),
        _case("day-range-step", "Days 1-10/4 on March 7: March 9 (1, 5, 9).", "day-of-month",
              "0 0 1-10/4 * *"),
        _case("new-year", "January 1 from 2026-12-31 23:59:59.999: one ms later.",
              "day-of-month", "0 0 1 1 *", "2026-12-31T23:59:59.999Z"),
        _case("quarterly", "The 1st of every 3rd month on March 7: April 1 (1, 4, 7, 10).",
              "day-of-month", "0 0 1 */3 *"),
        _case("month-only", "Any day of February, from March: 2027-02-01.", "day-of-month",
              "0 0 * 2 *"),
        _case("month-names", "Months JAN,JUL on March 7: July 1.", "day-of-month",
              "0 0 1 JAN,JUL *"),
        _case("month-name-lowercase", "Month jan (lowercase) on March 7: 2027-01-01.",
              "day-of-month", "0 0 1 jan *"),
        _case("month-range", "The 15th of months 2-4 on March 7: March 15.", "day-of-month",
              "0 0 15 2-4 *"),
        _case("month-range-step", "The 1st of months 1-12/4 on March 7: May 1 (1, 5, 9).",
              "day-of-month", "0 0 1 1-12/4 *"),
        _case("question-mark-day", "? as the day of month means any day.", "day-of-month",
              "0 0 ? * *"),
        _case("last-day", "L (last day of month) on March 7: March 31.", "day-of-month",
              "0 0 L * *"),
        _case("last-day-leap-february", "L in February from March 2027: 2028-02-29.",
              "day-of-month", "0 0 L 2 *", "2027-03-01T00:00:00.000Z"),
        _case("last-day-common-february", "L in February from March 2026: 2027-02-28.",
              "day-of-month", "0 0 L 2 *"),
        _case("last-day-exact", "L on March 31 at midnight exactly: April 30.", "day-of-month",
              "0 0 L * *", "2026-03-31T00:00:00.000Z"),
        _case("last-day-30-day-months", "L of months 4,6,9,11 on March 7: April 30.",
              "day-of-month", "0 0 L 4,6,9,11 *"),
        _case("day-31-some-months", "Day 31 of months 1,4 is accepted (January has one): "
              "2027-01-31.", "day-of-month", "0 0 31 1,4 *"),
        _case("day-list-with-last", "Days 1,L on March 7: March 31.", "day-of-month",
              "0 0 1,L * *"),
    ]


def _day_of_week_cases() -> list[Case]:
    return [
        _case("sunday-zero", "Day of week 0 on Saturday: Sunday.", "day-of-week", "0 0 * * 0"),
        _case("sunday-seven", "Day of week 7 is Sunday too.", "day-of-week", "0 0 * * 7"),
        _case("weekdays", "Days 1-5 on Saturday: Monday.", "day-of-week", "0 0 * * 1-5"),
        _case("weekday-name", "MON on Saturday: Monday.", "day-of-week", "0 0 * * MON"),
        _case("weekday-names-lowercase", "mon,fri (lowercase) on Saturday: Monday.",
              "day-of-week", "0 0 * * mon,fri"),
        _case("range-to-seven", "Days 5-7 on Monday: Friday (7 closes the range as Sunday).",
              "day-of-week", "0 0 * * 5-7", "2026-03-09T12:00:00.000Z"),
        _case("weekday-step", "*/2 days of week on Saturday: Sunday (0, 2, 4, 6).",
              "day-of-week", "0 0 * * */2"),
        _case("first-monday", "1#1 on March 7 (March 2 is past): April 6.", "day-of-week",
              "0 0 * * 1#1"),
        _case("first-monday-exact", "1#1 exactly on April 6 at midnight: May 4.",
              "day-of-week", "0 0 * * 1#1", "2026-04-06T00:00:00.000Z"),
        _case("third-friday", "5#3 on March 7: March 20.", "day-of-week", "0 0 * * 5#3"),
        _case("fifth-sunday", "0#5 on March 7: March 29 (March has five).", "day-of-week",
              "0 0 * * 0#5"),
        _case("fifth-monday", "1#5 on March 7: March 30.", "day-of-week", "0 0 * * 1#5"),
        _case("last-friday", "5L on March 7: March 27.", "day-of-week", "0 0 * * 5L"),
        _case("last-sunday-zero", "0L on March 7: March 29.", "day-of-week", "0 0 * * 0L"),
        _case("last-sunday-seven", "7L is the last Sunday too.", "day-of-week", "0 0 * * 7L"),
        _case("day-and-weekday-or-13th", "Day 13 and Friday on March 7: March 13, which is "
              "both.", "day-of-week", "0 0 13 * 5"),
        _case("day-and-weekday-or-monday", "Day 1 and Monday on March 7: Monday March 9 "
              "(either matches).", "day-of-week", "0 0 1 * 1"),
        _case("day-step-and-weekday", "Days */2 and Monday on March 7: March 9 (a stepped "
              "day is a restriction).", "day-of-week", "0 0 */2 * 1"),
        _case("question-mark-with-weekday", "? day of month with Monday: Monday.",
              "day-of-week", "0 0 ? * 1"),
        _case("last-day-or-friday", "L and Friday on March 7: Friday March 13 (OR, not the "
              "last Friday).", "day-of-week", "0 0 L * 5"),
        _case("first-week-or-monday", "Days 1-7 and Monday on Saturday March 7: Monday the "
              "9th (OR, not the first Monday).", "day-of-week", "0 0 1-7 * 1"),
        _case("weekday-range-step", "Days 1-5/2 on Saturday: Monday (1, 3, 5).",
              "day-of-week", "0 0 * * 1-5/2"),
        _case("weekday-name-range", "SUN-TUE on Saturday: Sunday.", "day-of-week",
              "0 0 * * SUN-TUE"),
    ]


def _alias_cases() -> list[Case]:
    return [
        _case("yearly", "@yearly: January 1.", "aliases", "@yearly"),
        _case("annually", "@annually: January 1.", "aliases", "@annually"),
        _case("monthly", "@monthly: the 1st.", "aliases", "@monthly"),
        _case("weekly", "@weekly: Sunday midnight.", "aliases", "@weekly"),
        _case("daily", "@daily: midnight.", "aliases", "@daily"),
        _case("hourly-alias", "@hourly: minute 0.", "aliases", "@hourly"),
        _case("minutely", "@minutely (cron-parser's): the next minute.", "aliases",
              "@minutely"),
        _case("secondly", "@secondly (cron-parser's): the next second.", "aliases",
              "@secondly"),
        _case("weekdays-alias", "@weekdays (cron-parser's) on Saturday: Monday midnight.",
              "aliases", "@weekdays"),
    ]


def _zone_cases() -> list[Case]:
    return [
        _case("ny-winter", "09:00 New York on March 7 (EST): 14:00 UTC.", "time-zone",
              "0 9 * * *", tz=NY),
        _case("ny-summer", "09:00 New York on March 8 after the shift (EDT): 13:00 UTC.",
              "time-zone", "0 9 * * *", "2026-03-08T12:00:00.000Z", tz=NY),
        _case("ny-gap-0230", "02:30 New York on the spring-forward day does not exist: "
              "03:30 EDT.", "time-zone", "30 2 * * *", tz=NY),
        _case("ny-gap-0200", "02:00 New York on the spring-forward day: 03:00 EDT.",
              "time-zone", "0 2 * * *", tz=NY),
        _case("ny-overlap-first", "01:30 New York on the fall-back day fires at 01:30 EDT, "
              "the first.", "time-zone", "30 1 * * *", "2026-11-01T04:00:00.000Z", tz=NY),
        _case("ny-overlap-once", "After 01:30 EDT on the fall-back day, 01:30 EST is skipped: "
              "the next day.", "time-zone", "30 1 * * *", "2026-11-01T05:30:00.000Z", tz=NY),
        _case("ny-hourly-gap", "Hourly across the New York gap at 01:30 EST: 03:00 EDT.",
              "time-zone", "0 * * * *", "2026-03-08T06:30:00.000Z", tz=NY),
        _case("ny-hourly-overlap", "Hourly at 01:30 EDT on the fall-back day: 01:00 EST, the "
              "hour again.", "time-zone", "0 * * * *", "2026-11-01T05:30:00.000Z", tz=NY),
        _case("ny-hourly-after-overlap", "Hourly at 01:00 EST on the fall-back day: 02:00 "
              "EST.", "time-zone", "0 * * * *", "2026-11-01T06:00:00.000Z", tz=NY),
        _case("ny-half-hourly-overlap", "*/30 at 01:45 EDT on the fall-back day: 01:00 EST.",
              "time-zone", "*/30 * * * *", "2026-11-01T05:45:00.000Z", tz=NY),
        _case("ny-midnight", "Midnight New York from 07:00 EST: 05:00 UTC the next day.",
              "time-zone", "0 0 * * *", tz=NY),
        _case("london-gap", "01:30 London on the spring-forward day does not exist: 02:30 "
              "BST.", "time-zone", "30 1 * * *", "2026-03-28T12:00:00.000Z", tz=LONDON),
        _case("london-overlap-first", "01:30 London on the fall-back day: 01:30 BST, the "
              "first.", "time-zone", "30 1 * * *", "2026-10-25T00:00:00.000Z", tz=LONDON),
        _case("london-overlap-once", "After 01:30 BST on the fall-back day, 01:30 GMT is "
              "skipped.", "time-zone", "30 1 * * *", "2026-10-25T00:30:00.000Z", tz=LONDON),
        _case("london-after-gap", "03:00 London on the spring-forward day: 02:00 UTC (BST).",
              "time-zone", "0 3 * * *", "2026-03-28T12:00:00.000Z", tz=LONDON),
        _case("london-gap-hour", "01:00 London on the spring-forward day: 02:00 BST.",
              "time-zone", "0 1 * * *", "2026-03-28T12:00:00.000Z", tz=LONDON),
        _case("london-midnight-before-gap", "Midnight London on the spring-forward day is "
              "still GMT.", "time-zone", "0 0 * * *", "2026-03-28T12:00:00.000Z", tz=LONDON),
        _case("london-quarter-gap", "*/15 London at 00:50 GMT on the spring-forward day: "
              "02:00 BST.", "time-zone", "*/15 * * * *", "2026-03-29T00:50:00.000Z", tz=LONDON),
        _case("kolkata", "Midnight Asia/Kolkata (+05:30): 18:30 UTC.", "time-zone",
              "0 0 * * *", tz="Asia/Kolkata"),
        _case("kathmandu", "Midnight Asia/Kathmandu (+05:45): 18:15 UTC.", "time-zone",
              "0 0 * * *", tz="Asia/Kathmandu"),
        _case("chatham", "Midnight Pacific/Chatham (+13:45 in March): the next day there.",
              "time-zone", "0 0 * * *", tz="Pacific/Chatham"),
        _case("tokyo-last-day", "L in Asia/Tokyo at 16:00 UTC March 30 (March 31 there): "
              "April 30.", "time-zone", "0 0 L * *", "2026-03-30T16:00:00.000Z",
              tz="Asia/Tokyo"),
        _case("kiritimati-first", "The 1st in Pacific/Kiritimati (+14): April 1 there.",
              "time-zone", "0 0 1 * *", tz="Pacific/Kiritimati"),
        _case("utc-named", "tz UTC is accepted, the same as none.", "time-zone", "0 0 * * *",
              tz="UTC"),
        _case("etc-gmt-sign", "Etc/GMT+5 is UTC-5 (the sign is inverted): 05:00 UTC.",
              "time-zone", "0 0 * * *", tz="Etc/GMT+5"),
        _case("lord-howe-gap-end", "02:30 Lord Howe on its half-hour spring-forward day "
              "exists: 02:30.", "time-zone", "30 2 * * *", "2026-10-03T12:00:00.000Z",
              tz=LORD_HOWE),
        _case("lord-howe-gap-skips-day", "02:15 Lord Howe on its spring-forward day does not "
              "exist: the next day.", "time-zone", "15 2 * * *", "2026-10-03T12:00:00.000Z",
              tz=LORD_HOWE),
        _case("lord-howe-overlap-first", "01:45 Lord Howe on its fall-back day: the first "
              "01:45 (+11).", "time-zone", "45 1 * * *", "2026-04-04T12:00:00.000Z",
              tz=LORD_HOWE),
        _case("lord-howe-overlap-once", "After the first 01:45 Lord Howe, the second is "
              "skipped: the next day.", "time-zone", "45 1 * * *", "2026-04-04T14:50:00.000Z",
              tz=LORD_HOWE),
        _case("lord-howe-hourly-gap", "Hourly at 01:40 Lord Howe on its spring-forward day: "
              "03:00 (+11).", "time-zone", "0 * * * *", "2026-10-03T15:10:00.000Z", tz=LORD_HOWE),
        _case("ny-weekdays-noon", "Noon New York weekdays on Saturday: Monday 12:00 EDT.",
              "time-zone", "0 12 * * 1-5", tz=NY),
        _case("tokyo-sunday", "Sunday in Asia/Tokyo at 21:00 Saturday there: 3 hours later.",
              "time-zone", "0 0 * * 0", tz="Asia/Tokyo"),
        _case("ny-six-field-gap-day", "02:30:00 on March 8 (six fields) in New York: 03:30 "
              "EDT.", "time-zone", "0 30 2 8 3 *", "2026-03-01T00:00:00.000Z", tz=NY),
        _case("sao-paulo", "America/Sao_Paulo has no DST since 2019: midnight is 03:00 UTC.",
              "time-zone", "0 0 * * *", tz="America/Sao_Paulo"),
        _case("sydney-gap", "02:30 Sydney on its spring-forward day does not exist: 03:30 "
              "AEDT.", "time-zone", "30 2 * * *", "2026-10-03T12:00:00.000Z",
              tz="Australia/Sydney"),
        _case("ny-new-year", "January 1 in New York on December 31: 05:00 UTC.",
              "time-zone", "0 0 1 1 *", "2026-12-31T12:00:00.000Z", tz=NY),
        _case("kiritimati-leap-day", "February 29 in Pacific/Kiritimati: 2028-02-28 10:00 "
              "UTC.", "time-zone", "0 0 29 2 *", tz="Pacific/Kiritimati"),
        _case("kiritimati-first-monday", "1#1 in Pacific/Kiritimati: April 6 there.",
              "time-zone", "0 0 * * 1#1", tz="Pacific/Kiritimati"),
        _case("los-angeles-last-day", "L in Los Angeles: March 31, in PDT.", "time-zone",
              "0 0 L * *", tz="America/Los_Angeles"),
        _case("sydney-last-friday", "5L in Sydney: March 27 there.", "time-zone",
              "0 0 * * 5L", tz="Australia/Sydney"),
    ]


def _window_cases() -> list[Case]:
    return [
        _case("start-ahead", "A start date a week ahead, at noon: the midnight after it.",
              "window", "0 0 * * *", start="2026-03-14T12:00:00.000Z"),
        _case("start-on-a-fire-time", "A start date exactly on a fire time skips it: the "
              "next day.", "window", "0 0 * * *", start="2026-03-14T00:00:00.000Z"),
        _case("start-past", "A start date in the past is ignored: the next midnight.",
              "window", "0 0 * * *", start="2026-03-01T00:00:00.000Z"),
        _case("start-equals-now", "A start date equal to now: the next second.", "window",
              "* * * * * *", start=SAT),
        _case("start-ahead-seconds", "Every second with a start date at :05.500: :06.",
              "window", "* * * * * *", start="2026-03-07T12:00:05.500Z"),
        _case("start-ahead-in-zone", "A start date ahead with tz New York: 09:00 EDT after "
              "it.", "window", "0 9 * * *", tz=NY, start="2026-03-10T00:00:00.000Z"),
        _case("start-ahead-monthly", "The 1st with a start date of June 15: July 1.",
              "window", "0 0 1 * *", start="2026-06-15T00:00:00.000Z"),
        _case("end-after", "An end date after the next fire time: it fires.", "window",
              "0 0 * * *", end="2026-03-09T00:00:00.000Z"),
        _case("end-before", "An end date before the next fire time: no fire time (null).",
              "window", "0 0 * * *", end="2026-03-07T23:00:00.000Z"),
        _case("end-on-fire-time", "An end date exactly on the next fire time still fires.",
              "window", "0 0 * * *", end="2026-03-08T00:00:00.000Z"),
        _case("end-one-ms-before", "An end date 1 ms before the next fire time: null.",
              "window", "0 0 * * *", end="2026-03-07T23:59:59.999Z"),
        _case("end-past", "An end date already past: the upsert throws (invalid).", "window",
              "0 0 * * *",
              end="2026-03-07T00:00:00.000Z"),
        _case("start-and-end", "Start March 10 (on a fire time), end March 12: March 11.",
              "window", "0 0 * * *", start="2026-03-10T00:00:00.000Z",
              end="2026-03-12T00:00:00.000Z"),
        _case("start-and-end-empty", "Start March 10 00:00 and end at noon: null (the start "
              "is skipped).", "window", "0 0 * * *", start="2026-03-10T00:00:00.000Z",
              end="2026-03-10T12:00:00.000Z"),
        _case("start-and-end-at-next", "Start March 10 06:00, end March 11 00:00: the end "
              "itself.", "window", "0 0 * * *", start="2026-03-10T06:00:00.000Z",
              end="2026-03-11T00:00:00.000Z"),
    ]


def _invalid_cases() -> list[Case]:
    return [
        _case("second-60", "Second 60 is rejected.", "invalid", "60 * * * * *"),
        _case("hour-24", "Hour 24 is rejected.", "invalid", "0 24 * * *"),
        _case("step-zero", "A step of 0 is rejected.", "invalid", "*/0 * * * *"),
        _case("month-13", "Month 13 is rejected.", "invalid", "0 0 * 13 *"),
        _case("day-zero", "Day of month 0 is rejected.", "invalid", "0 0 0 * *"),
        _case("weekday-8", "Day of week 8 is rejected.", "invalid", "0 0 * * 8"),
        _case("february-31", "February 31 is rejected (no month of the pattern has the day).",
              "invalid", "0 0 31 2 *"),
        _case("february-30", "February 30 is rejected.", "invalid", "0 0 30 2 *"),
        _case("april-31", "April 31 is rejected.", "invalid", "0 0 31 4 *"),
        _case("nearest-weekday", "W (nearest weekday) is rejected.", "invalid",
              "0 0 15W * *"),
        _case("last-weekday", "LW is rejected.", "invalid", "0 0 LW * *"),
        _case("last-day-offset", "L-2 is rejected.", "invalid", "0 0 L-2 * *"),
        _case("hash-in-list", "# in a list (1#1,5#3) is rejected.", "invalid",
              "0 0 * * 1#1,5#3"),
        _case("sixth-occurrence", "1#6 is rejected.", "invalid", "0 0 * * 1#6"),
        _case("midnight-alias", "@midnight is rejected.", "invalid", "@midnight"),
        _case("reboot-alias", "@reboot is rejected.", "invalid", "@reboot"),
        _case("seven-fields", "Seven fields are rejected.", "invalid", "* * * * * * *"),
        _case("year-field", "A year as the sixth field is read as a day of week: rejected.",
              "invalid", "0 0 1 1 * 2027"),
        _case("unknown-zone", "An unknown zone (Mars/Olympus) is rejected.", "invalid",
              "0 0 * * *", tz="Mars/Olympus"),
    ]


AREA = Area(
    "cron-parity",
    "Cron parity: the next fire time the client computes for a pattern, its tz, startDate "
    "and endDate (Node's answers).",
    NOTES,
    tuple(_seconds_cases() + _field_cases() + _day_of_month_cases() + _day_of_week_cases()
          + _alias_cases() + _zone_cases() + _window_cases() + _invalid_cases()),
    since=versions.WORKER_SINCE,
    rule=(
        "A pattern scheduler's iteration is repeat:<id>:<fire time>, and the fire time is the "
        "client's: next = the first time strictly after max(now, startDate) that the pattern "
        "matches in tz's wall clock (UTC without tz), or none when that is past endDate. A "
        "pattern or zone the client rejects makes the upsert throw."
    ),
    example="ny-gap-0230",
)
